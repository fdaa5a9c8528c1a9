package runner

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers/simulate"
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
	writeGeneratedRun(b, dir, simulate.Spec{Events: 1e6, Clients: 5})
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
func timeProcess(b *testing.B, cmd *exec.Cmd) (time.Duration, int64) {
	b.Helper()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return d, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
}
