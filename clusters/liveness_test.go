package clusters

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	now   = time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	alive = Harness{Host: "ci-1", PID: 4242, Start: now.Add(-time.Hour)}
)

// obj is a container of run runID with role and state, labelled by h.
func obj(runID, id, role, state string, created time.Time, h Harness) Object {
	l := h.labels()
	if h.PID == 0 {
		l = map[string]string{}
	}
	l[Label], l[roleLabel] = runID, role
	return Object{Kind: "container", Name: runID + "-" + role, ID: id, RunID: runID, State: state, Created: created, Labels: l}
}

func netObj(runID string, h Harness) Object {
	l := h.labels()
	l[Label] = runID
	return Object{Kind: "network", Name: "lockbench-" + runID, RunID: runID, Labels: l}
}

// Each case is decided by one object and has a near twin that differs in
// that object alone and gets the other answer.
func TestRunsLiveness(t *testing.T) {
	old := now.Add(-10 * time.Minute)
	inside := Harness{Host: "engine-host", PID: 1, Start: old, Controller: "ctl0123456789abcdef"}
	cases := []struct {
		name string
		objs []Object
		live bool
		why  string
	}{
		{"its liveness container runs",
			[]Object{obj("a1", "x1", LivenessRole, "running", old, alive), obj("a1", "x2", "redis", "running", old, alive), netObj("a1", alive)},
			true, "its liveness container runs: harness pid 4242 on ci-1"},
		{"its liveness container has exited: the harness was killed",
			[]Object{obj("a1", "x1", LivenessRole, "exited", old, alive), obj("a1", "x2", "redis", "running", old, alive), netObj("a1", alive)},
			false, "its harness is gone"},
		{"created a moment ago, about to start",
			[]Object{obj("a2", "x1", LivenessRole, "created", now.Add(-2*time.Second), alive), netObj("a2", alive)},
			true, "is starting"},
		{"created long ago and never started",
			[]Object{obj("a2", "x1", LivenessRole, "created", now.Add(-startGrace), alive), netObj("a2", alive)},
			false, "its harness is gone"},
		{"a run of an older lockbench, without a record, still running",
			[]Object{obj("a3", "x2", "redis", "running", old, Harness{}), obj("a3", "x3", "client", "running", old, Harness{})},
			false, "no liveness record"},
		{"a network alone, left by a run that died before its containers",
			[]Object{netObj("a4", alive)},
			false, "no liveness record"},
		{"inside a controller container that runs",
			[]Object{obj("ctl", inside.Controller, ControllerRole, "running", old, alive), obj("a5", "x2", "redis", "running", old, inside), netObj("a5", inside)},
			true, "its controller container runs: harness pid 1 in controller container ctl012345678"},
		{"inside a controller container that has ended",
			[]Object{obj("ctl", inside.Controller, ControllerRole, "exited", old, alive), obj("a5", "x2", "redis", "running", old, inside), netObj("a5", inside)},
			false, "its controller container ctl012345678 has ended"},
		{"inside a controller container that was removed",
			[]Object{obj("a5", "x2", "redis", "running", old, inside), netObj("a5", inside)},
			false, "has ended"},
		{"a controller container that runs",
			[]Object{obj("ctl", inside.Controller, ControllerRole, "running", old, alive)},
			true, "the controller container runs"},
		{"a controller container that has ended",
			[]Object{obj("ctl", inside.Controller, ControllerRole, "exited", old, alive)},
			false, "its harness is gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := Runs(c.objs, now)
			// The last object belongs to the run the case is about.
			want := c.objs[len(c.objs)-1].RunID
			for _, r := range runs {
				if r.ID != want {
					continue
				}
				if r.Live != c.live || !strings.Contains(r.Why, c.why) {
					t.Errorf("live %v (%s), want %v (%s)", r.Live, r.Why, c.live, c.why)
				}
				return
			}
			t.Fatalf("no run %s among %+v", want, runs)
		})
	}
}

// Runs are grouped by their label, each with all its objects, and one
// run's record says nothing of another's.
func TestRunsGroupByRun(t *testing.T) {
	objs := []Object{
		obj("r1", "x1", LivenessRole, "running", now, alive),
		obj("r2", "y1", LivenessRole, "exited", now, alive),
		obj("r1", "x2", "store", "running", now, alive),
		obj("r2", "y2", "store", "running", now, alive),
		netObj("r1", alive),
	}
	runs := Runs(objs, now)
	if len(runs) != 2 || runs[0].ID != "r1" || runs[1].ID != "r2" {
		t.Fatalf("runs %+v, want r1 then r2", runs)
	}
	if len(runs[0].Objects) != 3 || len(runs[1].Objects) != 2 {
		t.Errorf("r1 has %d objects, r2 %d; want 3 and 2", len(runs[0].Objects), len(runs[1].Objects))
	}
	if !runs[0].Live || runs[1].Live {
		t.Errorf("r1 live %v, r2 live %v; want true, false", runs[0].Live, runs[1].Live)
	}
	if runs[0].Harness != alive {
		t.Errorf("r1's harness %+v, want %+v", runs[0].Harness, alive)
	}
}

// The identity goes into labels and comes back whole; labels without it
// give none.
func TestHarnessLabelsRoundTrip(t *testing.T) {
	h := Harness{Host: "h", PID: 7, Start: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), Controller: "c0ffee"}
	if got := harnessOf(h.labels()); got != h {
		t.Errorf("got %+v, want %+v", got, h)
	}
	if got := harnessOf(map[string]string{Label: "r"}); got != (Harness{}) {
		t.Errorf("an unlabelled container gives %+v", got)
	}
}

// The kernel's start time of this process is before the test ran, and
// close to when its packages were set up.
func TestProcessStart(t *testing.T) {
	s := processStart()
	if s.After(time.Now()) || loaded.Sub(s) > time.Minute || s.Sub(loaded) > time.Second {
		t.Errorf("process start %s, packages loaded %s", s, loaded)
	}
}

// A harness of this host has ended when its pid is gone or names a process
// started at another time; one of another host, or in a controller
// container, is never taken for ended.
func TestEndedHere(t *testing.T) {
	if _, err := startOf("self"); err != nil {
		t.Skip("no /proc here:", err)
	}
	host, _ := os.Hostname()
	alive := exec.Command("sleep", "30")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = alive.Process.Kill(); _ = alive.Wait() }()
	started, err := startOf(strconv.Itoa(alive.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	h := Harness{Host: host, PID: alive.Process.Pid, Start: started}
	cases := []struct {
		name string
		h    Harness
		want bool
	}{
		{"a process that runs", h, false},
		{"its pid, now another process's", Harness{Host: host, PID: h.PID, Start: started.Add(-time.Second)}, true},
		{"a process that has exited", Harness{Host: host, PID: dead.Process.Pid, Start: started}, true},
		{"of another host", Harness{Host: host + "-other", PID: dead.Process.Pid, Start: started}, false},
		{"in a controller container", Harness{Host: host, PID: dead.Process.Pid, Start: started, Controller: "c0ffee"}, false},
		{"this very process", Harness{Host: host, PID: os.Getpid(), Start: started}, false},
	}
	for _, c := range cases {
		if got := c.h.endedHere(); got != c.want {
			t.Errorf("%s: ended %v, want %v", c.name, got, c.want)
		}
	}
}
