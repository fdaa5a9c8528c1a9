package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/internal/runtest"
	"github.com/lockbench/lockbench/rundir"
)

// pythonParse is the floor of a check: Python's json module parsing every
// line of the history and the store log, and nothing else.
const pythonParse = `
import json, sys
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        for line in f:
            json.loads(line)
`

// BenchmarkCheckLongRun times `lockbench check` of a generated clean run of
// 10⁶ events (125,000 sections, 5 clients), as long as an hour's soak run,
// pages included, against the floor of python3 merely parsing the same
// JSON lines; it reports the check's peak resident memory.
func BenchmarkCheckLongRun(b *testing.B) {
	bin := benchBinary(b)
	python, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("no python3 for the floor")
	}
	dir := b.TempDir()
	runtest.WriteGenerated(b, dir, simulate.Spec{Events: 1e6, Clients: 5})
	var ours, floor time.Duration
	var peak int64
	for b.Loop() {
		d, rss := timeProcess(b, exec.Command(bin, "check", dir))
		ours += d
		peak = max(peak, rss)
		d, _ = timeProcess(b, exec.Command(python, "-c", pythonParse,
			filepath.Join(dir, rundir.HistoryFile), filepath.Join(dir, rundir.StoreFile)))
		floor += d
	}
	n := float64(b.N)
	b.ReportMetric(ours.Seconds()*1000/n, "ms/check")
	b.ReportMetric(floor.Seconds()*1000/n, "ms/floor")
	b.ReportMetric(ours.Seconds()/floor.Seconds(), "x-floor")
	b.ReportMetric(float64(peak)/1024, "MB-peak-rss")
}

// timeProcess runs cmd and returns its wall time and peak resident memory
// in KiB. A check that judges the run valid exits 0.
//
// The peak is the process's own high-water mark (VmHWM), read from /proc
// every 2 ms while it runs, not the rusage of its exit: Go starts a child
// with vfork, so the child's ru_maxrss counts the peak of this test's
// process (which holds the generated run) before the child's exec.
func timeProcess(b *testing.B, cmd *exec.Cmd) (time.Duration, int64) {
	b.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("%s: %v", cmd, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			d := time.Since(start)
			if err != nil {
				b.Fatalf("%s: %v\n%s", cmd, err, out.Bytes())
			}
			return d, peak
		case <-tick.C:
			peak = max(peak, highWater(status))
		}
	}
}

// highWater reads VmHWM, in KiB, from a /proc status file; 0 once the
// process is gone.
func highWater(status string) int64 {
	data, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
