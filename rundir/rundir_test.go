package rundir

import (
	"testing"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
)

// Each heal's healthy gives its fault the time from the heal; a healthy
// that failed gives the reason; a fault on clients alone, and a fault of
// a history without healthy events, get neither.
func TestRecoveryPairsEachHealthyWithItsHeal(t *testing.T) {
	nem := func(i, at int64, f string, typ history.Type, fault, err string) history.Event {
		return history.Event{Index: i, Time: at, Process: history.Nemesis, Type: typ, F: f, Fault: fault, Error: err}
	}
	h := []history.Event{
		nem(0, 100, history.Start, history.Info, "kill", ""),
		nem(1, 200, history.Stop, history.Info, "kill", ""),
		nem(2, 4200, history.Healthy, history.Info, "kill", ""),
		nem(3, 5000, history.Start, history.Info, "pause", ""),
		nem(4, 6000, history.Stop, history.Info, "pause", ""),
		nem(5, 7000, history.Start, history.Info, "kill", ""),
		nem(6, 7500, history.Stop, history.Info, "kill", ""),
		nem(7, 9500, history.Healthy, history.Fail, "kill", "redis not healthy again"),
		nem(8, 9600, history.Start, history.Info, "kill", ""),
		nem(9, 9700, history.Stop, history.Info, "kill", ""),
	}
	rep := Results{Checkers: []checkers.Result{{Checker: "linearizable"}, {Checker: "exclusion", Faults: []checkers.FaultEffect{
		{Event: 0, Fault: "kill", Start: 100, End: 200},
		{Event: 3, Fault: "pause", Start: 5000, End: 6000},
		{Event: 5, Fault: "kill", Start: 7000, End: 7500},
		{Event: 8, Fault: "kill", Start: 9600, End: 9700},
	}}}}
	rep.Recovery(h)
	got := rep.Checkers[1].Faults
	want := []struct {
		healthy   int64
		unhealthy string
	}{{4000, ""}, {0, ""}, {0, "redis not healthy again"}, {0, ""}}
	for i, w := range want {
		if got[i].Healthy != w.healthy || got[i].Unhealthy != w.unhealthy {
			t.Errorf("fault %d (%s at %d): healthy %d %q, want %d %q", i, got[i].Fault, got[i].Start, got[i].Healthy, got[i].Unhealthy, w.healthy, w.unhealthy)
		}
	}
}
