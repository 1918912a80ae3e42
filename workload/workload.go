// Package workload is csisim's built-in container workload: what a pod's
// container does with its volumes so that a run can tell whether their data
// survives. For each mounted filesystem volume it reads back the markers
// earlier pods of the same claim wrote and writes its own: who it is and a
// checksum over a payload derived from that. The simulated kubelet runs it
// on every volume it has mounted for a pod; Check takes only a directory, so
// the same code can run in a real node's container image.
package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is the directory in a volume that holds the markers.
const Dir = ".csisim-workload"

// Pod says who writes a marker.
type Pod struct {
	UID, Namespace, Name string
	// Claim is the PersistentVolumeClaim the volume comes from.
	Claim string
}

// Report is what Check found.
type Report struct {
	// Wrote: the pod's own marker was written.
	Wrote bool
	// Found are the UIDs of the pods whose markers for the claim were
	// read back intact, sorted; Corrupt those whose markers were not.
	Found, Corrupt []string
	// Copied are the UIDs of the pods of other claims whose markers were
	// read back intact: copied in by a restore or a clone, sorted.
	Copied []string
}

// Check reads the markers in volume directory dir that pods of the same
// claim wrote, then (unless readOnly) writes pod's own and syncs it to the
// volume. Markers of other claims (a clone's source) are ignored.
func Check(dir string, pod Pod, readOnly bool) (Report, error) {
	var rep Report
	markers := filepath.Join(dir, Dir)
	names, err := os.ReadDir(markers)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("reading markers: %w", err)
	}
	for _, n := range names {
		uid, ok := strings.CutSuffix(n.Name(), ".marker")
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(markers, n.Name()))
		if err != nil {
			return rep, fmt.Errorf("reading marker %s: %w", n.Name(), err)
		}
		m, intact := parse(data)
		switch {
		case intact && (m.Claim != pod.Claim || m.Namespace != pod.Namespace):
			// Another claim's data, copied in by a clone or a restore.
			rep.Copied = append(rep.Copied, uid)
		case intact && m.UID == uid:
			rep.Found = append(rep.Found, uid)
		default:
			rep.Corrupt = append(rep.Corrupt, uid)
		}
	}
	slices.Sort(rep.Found)
	slices.Sort(rep.Corrupt)
	slices.Sort(rep.Copied)
	if readOnly {
		return rep, nil
	}
	if err := os.MkdirAll(markers, 0o755); err != nil {
		return rep, fmt.Errorf("writing marker: %w", err)
	}
	if err := writeSynced(filepath.Join(markers, pod.UID+".marker"), marker(pod)); err != nil {
		return rep, fmt.Errorf("writing marker: %w", err)
	}
	rep.Wrote = true
	return rep, nil
}

// marker is a pod's marker: its fields, a payload derived from them (so a
// marker is more than a few bytes that happen to survive), and the SHA-256
// of everything before it.
func marker(p Pod) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "csisim-workload marker v1\nuid=%s\npod=%s/%s\nclaim=%s\n", p.UID, p.Namespace, p.Name, p.Claim)
	seed := sha256.Sum256([]byte(p.UID))
	for range 64 { // 2 KiB of payload
		fmt.Fprintf(&b, "%s\n", hex.EncodeToString(seed[:16]))
		seed = sha256.Sum256(seed[:])
	}
	sum := sha256.Sum256(b.Bytes())
	fmt.Fprintf(&b, "sha256=%s\n", hex.EncodeToString(sum[:]))
	return b.Bytes()
}

// parse reads a marker back; intact is false if its checksum does not
// match or it is not a marker.
func parse(data []byte) (p Pod, intact bool) {
	body, sumLine, ok := cutLastLine(data)
	if !ok {
		return p, false
	}
	want, ok := strings.CutPrefix(sumLine, "sha256=")
	sum := sha256.Sum256(body)
	if !ok || want != hex.EncodeToString(sum[:]) {
		return p, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "uid":
			p.UID = v
		case "claim":
			p.Claim = v
		case "pod":
			p.Namespace, p.Name, _ = strings.Cut(v, "/")
		}
	}
	return p, bytes.HasPrefix(body, []byte("csisim-workload marker v1\n"))
}

// cutLastLine splits "...\nlast\n" into "...\n" and "last".
func cutLastLine(data []byte) (body []byte, last string, ok bool) {
	data, ok = bytes.CutSuffix(data, []byte("\n"))
	if !ok {
		return nil, "", false
	}
	i := bytes.LastIndexByte(data, '\n')
	if i < 0 {
		return nil, "", false
	}
	return data[:i+1], string(data[i+1:]), true
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReportLine is what the workload prints for the volume at path it checked
// for pod (cmd/csisim-workload in real nodes' containers, the simulated
// kubelet in its containers' logs): fixed words around the variable parts,
// so that a test or a person can grep for "found 1 earlier marker(s): UID"
// or "corrupt: none", and realcluster can read it back.
func ReportLine(path string, pod Pod, rep Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "csisim-workload: %s (claim %s/%s): ", path, pod.Namespace, pod.Claim)
	if rep.Wrote {
		fmt.Fprintf(&b, "wrote marker of pod %s", pod.UID)
	} else {
		b.WriteString("read-only, wrote no marker")
	}
	fmt.Fprintf(&b, "; found %d earlier marker(s)", len(rep.Found))
	if len(rep.Found) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(rep.Found, ", "))
	}
	corrupt := "none"
	if len(rep.Corrupt) > 0 {
		corrupt = strings.Join(rep.Corrupt, ", ")
	}
	fmt.Fprintf(&b, "; corrupt: %s", corrupt)
	return b.String()
}

// ErrorLine is what the workload prints, on stderr, when checking the
// volume at path failed.
func ErrorLine(path string, pod Pod, err error) string {
	return fmt.Sprintf("csisim-workload: %s (claim %s/%s): %v", path, pod.Namespace, pod.Claim, err)
}
