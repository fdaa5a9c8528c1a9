package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

// started is a lockbench run going on in the background.
type started struct {
	cmd        *exec.Cmd
	runID, dir string
	done       chan struct{}
	output     strings.Builder
}

// start launches a run and returns once it has printed its run id.
func start(t *testing.T, args ...string) *started {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	s := &started{done: make(chan struct{})}
	s.cmd = exec.Command(binary, append(args, "--results", t.TempDir())...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = &s.output
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan struct{})
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := runLine.FindStringSubmatch(sc.Text()); m != nil && s.runID == "" {
				s.runID, s.dir = m[1], m[2]
				close(found)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-found:
	case <-s.done:
		t.Fatalf("lockbench ended before starting a run: %s", s.output.String())
	case <-time.After(3 * time.Minute):
		t.Fatal("no run started within 3 minutes")
	}
	return s
}

// waitEvent polls the run's history until an event matches.
func (s *started) waitEvent(t *testing.T, what string, match func(history.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		events, _ := history.DecodeFile(filepath.Join(s.dir, rundir.HistoryFile))
		for _, e := range events {
			if match(e) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s in the history within a minute", what)
}

func (s *started) wait(t *testing.T) int {
	t.Helper()
	err := s.cmd.Wait()
	<-s.done
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return -1
		}
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func pauseStarted(e history.Event) bool {
	return e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Start && e.Fault == "pause"
}

// runContainers are the ids of the containers of run runID.
func runContainers(t *testing.T, runID string) []string {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "lockbench="+runID))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// assertNoFrozenWorker fails if a lockbench client process of one of the
// containers ids is stopped: a pause the harness never healed. Other
// runs on the same machine may have their own clients paused.
func assertNoFrozenWorker(t *testing.T, ids []string) {
	t.Helper()
	if len(ids) == 0 {
		t.Fatal("no containers of the run were seen")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		cgroup, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cgroup"))
		// The state follows the command name in parentheses.
		_, rest, ok := strings.Cut(string(stat), ") ")
		if !ok || !strings.HasPrefix(rest, "T") || !strings.Contains(string(cmdline), "worker") || !strings.Contains(string(cmdline), "lockbench") {
			continue
		}
		for _, id := range ids {
			if strings.Contains(string(cgroup), id) {
				t.Errorf("a lockbench worker of the run is still stopped: %s", p)
			}
		}
	}
}

// SIGKILL of the harness mid-run: nothing heals or removes anything, so
// `lockbench clean` must, and the partial run must still get a verdict.
func TestKilledHarnessIsCleanedAndCheckable(t *testing.T) {
	s := start(t, "run", "--nemesis", "pause", "--nemesis-interval", "1s", "--time-limit", "60s", "--seed", "11")
	s.waitEvent(t, "pause", pauseStarted)
	ids := runContainers(t, s.runID)
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait(t)

	// The killed run is not live: --dry-run says its log would be saved
	// and its containers removed, and does neither.
	dry, dcode := clean(t, "--dry-run", "--run", s.runID)
	if dcode != 0 || !strings.Contains(dry, "would save "+filepath.Join(s.dir, rundir.StoreFile)) || !strings.Contains(dry, "would remove container ") {
		t.Errorf("clean --dry-run of the killed run: exit %d, want its log and containers listed", dcode)
	}
	if _, err := os.Stat(filepath.Join(s.dir, rundir.StoreFile)); err == nil {
		t.Error("clean --dry-run saved the store log")
	}
	if left := runContainers(t, s.runID); len(left) != len(ids) {
		t.Errorf("clean --dry-run removed containers: %d left of %d", len(left), len(ids))
	}

	clean := exec.Command(binary, "clean", "--run", s.runID)
	out, err := clean.CombinedOutput()
	if err != nil {
		t.Fatalf("clean: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "saved ") {
		t.Errorf("clean did not save the store's log:\n%s", out)
	}
	assertNothingLeft(t, s.runID)
	assertNoFrozenWorker(t, ids)

	check := exec.Command(binary, "check", s.dir)
	out, err = check.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("check → %d\n%s", code, out)
	if code > 2 {
		t.Fatalf("check of the partial run gave no verdict (exit %d)", code)
	}
	rep := readReport(t, s.dir)
	if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, " "), "did not finish") {
		t.Errorf("results.json does not say the run was cut short: %v", rep.Notes)
	}
	if rep.Verdict == checkers.Valid || rep.Verdict == checkers.Invalid || rep.Verdict == checkers.Unknown {
		return
	}
	t.Errorf("verdict %q", rep.Verdict)
}

// SIGINT while a client is frozen: the run heals it, saves what it has and
// removes everything before it exits.
func TestInterruptMidFaultHealsAndRemoves(t *testing.T) {
	s := start(t, "run", "--nemesis", "pause", "--nemesis-interval", "1s", "--fault-duration", "30s", "--time-limit", "60s", "--seed", "12")
	s.waitEvent(t, "pause", pauseStarted)
	ids := runContainers(t, s.runID)
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// A second Ctrl-C while it cleans up must not cut the cleanup short.
	time.Sleep(200 * time.Millisecond)
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	code := s.wait(t)
	t.Logf("exit %d\n%s", code, s.output.String())
	if code != 255 {
		t.Errorf("exit %d, want 255 (interrupted)", code)
	}
	assertNothingLeft(t, s.runID)
	assertNoFrozenWorker(t, ids)

	events, err := history.DecodeFile(filepath.Join(s.dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var started, healed bool
	for _, e := range events {
		started = started || pauseStarted(e)
		healed = healed || (e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Stop && e.Error == "")
	}
	if !started || !healed {
		t.Errorf("history: pause started %v, healed %v", started, healed)
	}
	if _, err := os.Stat(filepath.Join(s.dir, rundir.ResultsFile)); err != nil {
		t.Errorf("no results for the interrupted run: %v", err)
	}
}
