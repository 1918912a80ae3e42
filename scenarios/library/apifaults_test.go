package library_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// runLibraryScenario runs a library scenario on the simulator and returns
// its timeline; the run must pass.
func runLibraryScenario(file string) []trace.Entry {
	sc, err := scenarios.Load(file)
	Expect(err).NotTo(HaveOccurred())
	res, rec, _, runErr := runOnSimulator(sc)
	Expect(runErr).NotTo(HaveOccurred())
	Expect(res.Passed()).To(BeTrue())
	return rec.Entries()
}

var _ = Describe("api-conflict-provisioner", func() {
	It("refuses the sidecar's three updates of the clone's source, which it retries after 1 s, 2 s and 4 s", func() {
		entries := runLibraryScenario("api-conflict-provisioner.yaml")
		fault := indexOf(entries, func(e trace.Entry) bool { return e.Kind == trace.Fault && e.Verb == "api-conflict" })
		Expect(fault).To(BeNumerically(">=", 0), "no FAULT entry for the api-conflict")
		var refused []trace.Entry
		var sourceUpdate *trace.Entry
		for i, e := range entries[fault:] {
			if e.Kind != trace.API || e.Actor != "external-provisioner" || e.Object != "PersistentVolumeClaim default/data" {
				continue
			}
			if e.Err == "" {
				sourceUpdate = &entries[fault+i]
				break
			}
			Expect(e.Verb).To(Equal("update"))
			Expect(e.Detail).To(Equal("409 Conflict"))
			Expect(e.Err).To(Equal(`Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified; please apply your changes to the latest version and try again`))
			refused = append(refused, e)
		}
		Expect(refused).To(HaveLen(3))
		Expect(sourceUpdate).NotTo(BeNil(), "the source claim never got its cloning finalizer")
		// The sidecar's claim queue: --retry-interval-start 1 s, doubling.
		Expect(refused[1].At - refused[0].At).To(Equal(time.Second))
		Expect(refused[2].At - refused[1].At).To(Equal(2 * time.Second))
		Expect(sourceUpdate.At - refused[2].At).To(Equal(4 * time.Second))
		// No other write of the sidecar was refused: its PV creates and its
		// events (created, or counted with a patch) cannot conflict.
		for _, e := range entries {
			if e.Kind == trace.API && e.Err != "" {
				Expect(e.Object).To(Equal("PersistentVolumeClaim default/data"), "unexpected failed write %s", e)
			}
		}
	})
})

var _ = Describe("watch-drop-attachdetach", func() {
	It("attaches the volume only after the controller's reflector relists, within its first backoff of the pod's binding", func() {
		entries := runLibraryScenario("watch-drop-attachdetach.yaml")
		bind := indexOf(entries, func(e trace.Entry) bool {
			return e.Kind == trace.API && e.Verb == "bind" && e.Object == "Pod default/app"
		})
		relist := indexOf(entries, func(e trace.Entry) bool { return e.Kind == trace.Fault && e.Verb == "relist" })
		attach := indexOf(entries, func(e trace.Entry) bool {
			return e.Kind == trace.API && e.Verb == "create" && strings.HasPrefix(e.Object, "VolumeAttachment ")
		})
		Expect(bind).To(BeNumerically(">=", 0))
		Expect(relist).To(BeNumerically(">", bind), "no relist after the binding")
		Expect(attach).To(BeNumerically(">", relist), "the VolumeAttachment came before the relist")
		Expect(entries[relist].Actor).To(Equal("attachdetach-controller"))
		Expect(entries[relist].Object).To(Equal("pods"))
		// The creation and the binding dropped, and, on the ended watch,
		// the kubelet's first status of the pod (ContainerCreating).
		Expect(entries[relist].Detail).To(ContainSubstring("3 events missed; added [default/app]"))
		// The reflector's first backoff: 800 ms stretched by up to 100 %.
		wait := entries[relist].At - entries[bind].At
		Expect(wait).To(BeNumerically(">=", 800*time.Millisecond))
		Expect(wait).To(BeNumerically("<", 1600*time.Millisecond))
		Expect(entries[attach].At).To(Equal(entries[relist].At))
	})

	It("detaches only after the second relist, which tells of the deleted pod with a tombstone after a doubled backoff", func() {
		entries := runLibraryScenario("watch-drop-attachdetach.yaml")
		gone := indexOf(entries, func(e trace.Entry) bool {
			return e.Kind == trace.API && e.Object == "Pod default/app" && e.Detail == "removed"
		})
		Expect(gone).To(BeNumerically(">=", 0))
		relist := indexOf(entries[gone:], func(e trace.Entry) bool { return e.Kind == trace.Fault && e.Verb == "relist" })
		Expect(relist).To(BeNumerically(">", 0), "no relist after the pod went")
		relist += gone
		detach := indexOf(entries, func(e trace.Entry) bool {
			return e.Kind == trace.API && e.Actor == "attachdetach-controller" && e.Verb == "delete" && strings.HasPrefix(e.Object, "VolumeAttachment ")
		})
		Expect(detach).To(BeNumerically(">", relist), "the VolumeAttachment was deleted before the relist")
		Expect(entries[relist].Detail).To(ContainSubstring("deleted (tombstones) [default/app]"))
		deleted := indexOf(entries, func(e trace.Entry) bool {
			return e.Kind == trace.API && e.Actor == "scenario" && e.Verb == "delete" && e.Object == "Pod default/app"
		})
		// The second failure within two minutes: 1.6 s, stretched by up to 100 %.
		wait := entries[relist].At - entries[deleted].At
		Expect(wait).To(BeNumerically(">=", 1600*time.Millisecond))
		Expect(wait).To(BeNumerically("<", 3200*time.Millisecond))
	})
})
