package workload

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	first := Pod{UID: "uid-1", Namespace: "default", Name: "app", Claim: "data"}
	second := Pod{UID: "uid-2", Namespace: "default", Name: "app", Claim: "data"}

	rep, err := Check(dir, first, false)
	if err != nil || !rep.Wrote || len(rep.Found) != 0 || len(rep.Corrupt) != 0 {
		t.Fatalf("first pod on an empty volume: %+v, %v", rep, err)
	}
	rep, err = Check(dir, second, false)
	if err != nil || !rep.Wrote || !slices.Equal(rep.Found, []string{"uid-1"}) {
		t.Fatalf("second pod: %+v, %v; want uid-1 found", rep, err)
	}

	// A flipped byte in the payload is corruption.
	path := filepath.Join(dir, Dir, "uid-1.marker")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Check(dir, Pod{UID: "uid-3", Namespace: "default", Name: "app", Claim: "data"}, true)
	if err != nil || rep.Wrote || !slices.Equal(rep.Found, []string{"uid-2"}) || !slices.Equal(rep.Corrupt, []string{"uid-1"}) {
		t.Fatalf("after corruption, read-only: %+v, %v; want uid-2 found, uid-1 corrupt, nothing written", rep, err)
	}

	// A claim of the same name in another namespace is another claim.
	rep, err = Check(dir, Pod{UID: "uid-5", Namespace: "other", Name: "app", Claim: "data"}, true)
	if err != nil || len(rep.Found) != 0 {
		t.Fatalf("another namespace: %+v, %v; want nothing found", rep, err)
	}

	// Another claim's markers (copied by a clone) are not this claim's.
	rep, err = Check(dir, Pod{UID: "uid-4", Namespace: "default", Name: "clone", Claim: "copy"}, false)
	if err != nil || len(rep.Found) != 0 || !slices.Equal(rep.Corrupt, []string{"uid-1"}) {
		t.Fatalf("another claim: %+v, %v; want nothing found (uid-1 still corrupt)", rep, err)
	}
}

func TestCheckUnreadableDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, Dir), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(dir, Pod{UID: "u", Claim: "c"}, false); err == nil {
		t.Fatal("Check on a volume whose marker directory is a file: no error")
	}
}
