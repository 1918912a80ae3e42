package realnodes

import (
	"debug/elf"
	"fmt"

	"github.com/csisim/csisim/realnodes/image"
)

// The images every real node has, imported at start from one archive:
// csisim's workload binary (cmd/csisim-workload) as the pod sandbox's
// pause process and as every container.
const (
	PauseImage    = "csisim.local/pause:v1"
	WorkloadImage = "csisim.local/workload:v1"
	// workloadPath is the binary's path in both images.
	workloadPath = "/csisim-workload"
)

// WriteImages writes the archive of the pause and workload images, made
// from the static binary workloadBin, to path.
func WriteImages(path, workloadBin string) error {
	if err := checkStatic(workloadBin); err != nil {
		return err
	}
	files := map[string]string{workloadPath: workloadBin}
	return image.WriteArchive(path,
		image.Image{Tag: PauseImage, Entrypoint: []string{workloadPath, "pause"}, Files: files},
		image.Image{Tag: WorkloadImage, Entrypoint: []string{workloadPath, "run"}, Files: files})
}

// checkStatic refuses a binary that needs a dynamic loader: the images
// hold nothing else.
func checkStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("workload binary %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("workload binary %s is dynamically linked; build it with CGO_ENABLED=0 (make build does)", bin)
		}
	}
	return nil
}
