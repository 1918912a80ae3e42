package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// startCPUProfile writes a CPU profile to path until the returned function
// is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// startHeapProfile writes a heap profile to path when the heap in use is at
// its largest: it looks once a second (wall time: the profile is a file
// beside the run and changes nothing the run does) and rewrites the file
// whenever the heap has grown by an eighth since the last one written, and
// once more when the returned function is called, if the heap is then the
// largest. Its allocation samples (alloc_space) cover the whole run either
// way; its in-use ones (inuse_space) are those of the peak, where memory is
// the question.
func startHeapProfile(path string) (func(), error) {
	if err := writeHeapProfile(path); err != nil {
		return nil, err
	}
	var written uint64
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapInuse > written+written/8 {
			written = m.HeapInuse
			_ = writeHeapProfile(path)
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		sample()
	}, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile: %w", err)
	}
	return f.Close()
}
