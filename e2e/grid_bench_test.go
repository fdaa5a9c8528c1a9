package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/lockbench/lockbench/matrix"
)

// BenchmarkDefaultGrid runs `lockbench matrix` as a user comparing every
// backend runs it, with its defaults (every backend, none and pause, both
// fences where a backend has tokens, two cells at a time; the time limit
// written out as its default, 20 s), and once more one cell at a time, and
// reports each wall time against the floor of the sum of its cells' time
// limits: the time the workloads themselves take, one cell after another.
// What lies between is bring-up, teardown and checking, less what running
// two cells at once hides. About 7 and 12 minutes on 2 cores, images
// built; by hand (make bench), not in CI.
func BenchmarkDefaultGrid(b *testing.B) {
	const limit = 20 * time.Second
	for _, parallel := range []string{"2", "1"} {
		b.Run("parallel="+parallel, func(b *testing.B) {
			for range b.N {
				began := time.Now()
				cmd := exec.Command(binary, "matrix", "--time-limit", limit.String(), "--parallel", parallel, "--json", "--results", b.TempDir())
				var stdout bytes.Buffer
				cmd.Stdout = &stdout
				if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() > 2 {
					b.Fatalf("matrix: %v", err)
				}
				wall := time.Since(began)
				var sum matrix.Summary
				if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
					b.Fatal(err)
				}
				runs := 0
				for _, c := range sum.Cells {
					runs += len(c.Runs)
				}
				if runs == 0 {
					b.Fatal("the default grid ran nothing")
				}
				limits := time.Duration(runs) * limit
				b.ReportMetric(wall.Seconds(), "s/grid")
				b.ReportMetric(limits.Seconds(), "s-limits-floor")
				b.ReportMetric(wall.Seconds()/limits.Seconds(), "x-floor")
				b.ReportMetric(float64(len(sum.Cells)), "cells")
			}
		})
	}
}
