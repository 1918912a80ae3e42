package kubelet

import "testing"

func TestPendingOpsOnePerVolume(t *testing.T) {
	var p pendingOps
	if !p.start("a") || !p.start("b") {
		t.Fatal("first operations refused")
	}
	if p.start("a") {
		t.Error("a second operation of a volume started")
	}
	p.done("a")
	if !p.start("a") {
		t.Error("an operation refused after the previous one was done")
	}
	p.clear()
	if !p.start("b") {
		t.Error("an operation refused after clear")
	}
}
