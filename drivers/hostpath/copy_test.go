package hostpath

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestCopySparseKeepsHolesAndContent(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.img")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	// Data at the start and in the middle, holes around, a hole at the end.
	for _, off := range []int64{0, 8 * mib} {
		if _, err := f.WriteAt(bytes.Repeat([]byte("x"), 64<<10), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(32 * mib); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dst := filepath.Join(dir, "dst.img")
	if err := os.WriteFile(dst, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := copyImage(src, dst, 48*mib); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 48*mib {
		t.Fatalf("copy has %d bytes, want it grown to %d", fi.Size(), 48*mib)
	}
	if got := allocatedBytes(t, dst); got > 4*mib {
		t.Fatalf("copy allocates %d bytes: holes were filled", got)
	}
	a, _ := os.ReadFile(src)
	b, _ := os.ReadFile(dst)
	if !bytes.Equal(a, b[:len(a)]) || !bytes.Equal(b[len(a):], make([]byte, len(b)-len(a))) {
		t.Fatal("copy differs from the source")
	}
}

func TestCopyTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to copy owners")
	}
	src, dst := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "d/e"), 0o755))
	must(os.WriteFile(filepath.Join(src, "d/e/f.txt"), []byte("deep"), 0o600))
	must(os.Chown(filepath.Join(src, "d/e/f.txt"), 1234, 5678))
	must(os.Chmod(filepath.Join(src, "d"), 0o777|os.ModeSticky))
	must(os.Symlink("/", filepath.Join(src, "root-link")))
	must(os.Symlink("../../..", filepath.Join(src, "d/up")))
	must(syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644))

	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "d/e/f.txt")); err != nil || string(got) != "deep" {
		t.Fatalf("copied file = %q, %v", got, err)
	}
	fi, err := os.Stat(filepath.Join(dst, "d/e/f.txt"))
	must(err)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1234 || st.Gid != 5678 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copied file owner %d:%d mode %v", st.Uid, st.Gid, fi.Mode())
	}
	if fi, err := os.Stat(filepath.Join(dst, "d")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Fatalf("copied directory mode = %v, %v", fi.Mode(), err)
	}
	for link, want := range map[string]string{"root-link": "/", "d/up": "../../.."} {
		if got, err := os.Readlink(filepath.Join(dst, link)); err != nil || got != want {
			t.Fatalf("link %s = %q, %v; want %q", link, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "fifo")); !os.IsNotExist(err) {
		t.Fatalf("special file copied: %v", err)
	}
}
