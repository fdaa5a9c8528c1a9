package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/catalog"
)

// A two-cell matrix --until-decided, interrupted in its second run and
// then resumed, ends with the seeds and the run count of one that ran
// through: the interrupted run counts for nothing and its seed runs
// again. Both write a measured directory, from which derive decides the
// same classes.
func TestUntilDecidedResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	grid := []string{"matrix", "--backends", "cas,redis", "--nemeses", "none", "--fences", "none", "--time-limit", "3s",
		"--seed", "5", "--parallel", "1", "--until-decided", "--min-runs", "2", "--max-runs", "3"}
	whole, split := t.TempDir(), t.TempDir()
	var wg sync.WaitGroup
	var wholeRun result
	wg.Go(func() {
		wholeRun = runBinary(t, 5*time.Minute, nil, append(grid, "--results", whole, "--measured", filepath.Join(whole, "measured"))...)
	})

	// The interrupted invocation: SIGINT once its second run has begun.
	args := append(grid, "--results", split, "--measured", filepath.Join(split, "measured"))
	cmd := exec.Command(binary, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	begun := 0
	for sc.Scan() {
		if runLine.MatchString(sc.Text()) {
			if begun++; begun == 2 {
				time.Sleep(time.Second)
				if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	err = cmd.Wait()
	if begun != 2 || cmd.ProcessState.ExitCode() != 255 {
		t.Fatalf("interrupted in run %d, exit %d (%v): %s", begun, cmd.ProcessState.ExitCode(), err, stderr.String())
	}
	resumed := runBinary(t, 5*time.Minute, nil, args...)
	wg.Wait()
	if wholeRun.exit != 0 || resumed.exit != 0 {
		t.Fatalf("exit %d uninterrupted, %d resumed:\n%s\n%s", wholeRun.exit, resumed.exit, wholeRun.stderr, resumed.stderr)
	}
	if !strings.Contains(resumed.stdout+resumed.stderr, "valid: 0/2 invalid") {
		t.Errorf("the resumed matrix does not print its decisions:\n%s", resumed.stdout)
	}

	seeds := func(root string) map[string][]int64 {
		c, err := catalog.Open(filepath.Join(root, catalog.File))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cells, err := c.MeasuredCells()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]int64{}
		for _, mc := range cells {
			runs, stale, err := c.CellRuns(mc.Name, mc.Flags, func(string) bool { return true })
			if err != nil || stale != 0 {
				t.Fatalf("%s: %d stale (%v)", mc.Name, stale, err)
			}
			for _, r := range runs {
				out[mc.Name] = append(out[mc.Name], r.Seed)
			}
		}
		return out
	}
	a, b := seeds(whole), seeds(split)
	if len(a) != 2 {
		t.Fatalf("cells measured: %v", a)
	}
	for cell, s := range a {
		if len(s) != 2 || !slices.Equal(s, b[cell]) {
			t.Errorf("%s: seeds %v resumed, %v uninterrupted (want 2 runs each)", cell, b[cell], s)
		}
	}
	// The measured directories hold the same runs (one line each, the
	// interrupted run left out), and derive decides the same section.
	derived := func(root string) string {
		exp := filepath.Join(root, "expectations.yaml")
		if err := os.WriteFile(exp, []byte("rules:\n  - expect: valid\n    reason: without faults a lock keeps the sections apart\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runBinary(t, time.Minute, nil, "matrix", "derive", "--from", filepath.Join(root, "measured"), "--expectations", exp, "--min-runs", "2")
		if r.exit != 0 {
			t.Fatalf("derive: exit %d: %s", r.exit, r.stderr)
		}
		data, err := os.ReadFile(exp)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	da, db := derived(whole), derived(split)
	if da != db || strings.Count(da, "class: valid") != 2 {
		t.Errorf("derived from the uninterrupted runs:\n%s\nfrom the resumed ones:\n%s", da, db)
	}
}
