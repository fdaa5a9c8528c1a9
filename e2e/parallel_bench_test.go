package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/matrix"
)

// BenchmarkParallelCells runs one grid of expected-valid and
// expected-invalid cells with --parallel 1 (the floor, in the same
// benchmark), 2 and 4, and reports for each its wall time, its ratio to
// the floor, the detection rate (runs of expected-invalid cells judged
// invalid), the false positives (runs of expected-valid cells judged
// invalid) and the runs left unknown. It takes about 25 minutes on 2 cores:
// `make parallelism`, by hand, not in CI.
func BenchmarkParallelCells(b *testing.B) {
	grid := []string{"matrix", "--backends", "redis,etcd,cas", "--nemeses", "none,pause", "--fences", "none,all",
		"--runs", "3", "--time-limit", "15s", "--seed", "500", "--json"}
	var floor float64
	fmt.Fprintln(os.Stderr, "| --parallel | wall time | vs one at a time | detection rate | false positives | unknown |")
	fmt.Fprintln(os.Stderr, "|---|---|---|---|---|---|")
	for _, k := range []int{1, 2, 4} {
		b.Run("parallel="+strconv.Itoa(k), func(b *testing.B) {
			for range b.N {
				began := time.Now()
				cmd := exec.Command(binary, append(grid, "--parallel", strconv.Itoa(k), "--results", b.TempDir())...)
				var stdout bytes.Buffer
				cmd.Stdout = &stdout
				if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() > 2 {
					b.Fatalf("--parallel %d: %v", k, err)
				}
				wall := time.Since(began).Seconds()
				var sum matrix.Summary
				if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
					b.Fatal(err)
				}
				var invalidRuns, found, validRuns, falsePos, unknown int
				for _, c := range sum.Cells {
					for _, r := range c.Runs {
						switch {
						case r.Verdict != checkers.Valid && r.Verdict != checkers.Invalid:
							unknown++
						case c.Expect == matrix.ExpectInvalid:
							invalidRuns++
							if r.Verdict == checkers.Invalid {
								found++
							}
						case c.Expect == matrix.ExpectValid:
							validRuns++
							if r.Verdict == checkers.Invalid {
								falsePos++
							}
						}
					}
				}
				if k == 1 {
					floor = wall
				}
				b.ReportMetric(wall, "wall-s")
				b.ReportMetric(wall/floor, "x-floor")
				b.ReportMetric(float64(found)/float64(invalidRuns), "detection")
				b.ReportMetric(float64(falsePos), "false-positives")
				fmt.Fprintf(os.Stderr, "| %d | %s | %.2f× | %d of %d | %d of %d | %d |\n", k, (time.Duration(wall) * time.Second).Round(time.Second),
					wall/floor, found, invalidRuns, falsePos, validRuns, unknown)
			}
		})
	}
}
