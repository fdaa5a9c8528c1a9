package checkers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// sections makes n acknowledged writes by c1, one per millisecond from t0.
func sections(n int, t0 int64) []history.Event {
	var h []history.Event
	for i := 0; i < n; i++ {
		t := t0 + int64(i)*1e6
		h = append(h,
			history.Event{Time: t, Process: "c1", Type: history.Invoke, F: history.Write},
			history.Event{Time: t + 1, Process: "c1", Type: history.OK, F: history.Write})
	}
	return h
}

func fault(t int64) history.Event {
	return history.Event{Time: t, Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: "pause", Targets: []string{"c1"}}
}

func TestProgress(t *testing.T) {
	cases := []struct {
		name    string
		history []history.Event
		want    Verdict
		reason  string
	}{
		{"no faults, enough work", sections(5, 0), Valid, ""},
		{"no faults, no work", nil, Unknown, "0 critical sections completed in the whole run"},
		{"fault before the workload got going", append(sections(3, 0), fault(2e6)), Unknown, "2 critical sections completed before the first fault"},
		{"fault after enough work", append(sections(10, 0), fault(7e6)), Valid, ""},
		// A failed or unknown write is not a completed section.
		{"only failed writes", []history.Event{
			{Time: 1, Process: "c1", Type: history.Invoke, F: history.Write},
			{Time: 2, Process: "c1", Type: history.Info, F: history.Write},
		}, Unknown, "not meaningful"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Progress{MinSections: 5}.Check(Input{History: c.history})
			if r.Valid != c.want {
				t.Fatalf("verdict %s, want %s (%s)", r.Valid, c.want, r.Summary)
			}
			if !strings.Contains(r.Reason, c.reason) {
				t.Errorf("reason %q, want it to mention %q", r.Reason, c.reason)
			}
		})
	}
}

// TestDeadlockGolden judges two hand-written runs with a 1 s TTL. In
// deadlock, a setnx-expire client is killed between SETNX and EXPIRE: its
// key never expires, and c1 and c2 wait from 0.326 s to the end at 8.001 s
// with no one holding the lock, no grant and no fault in force. In
// long-wait, c2 waits 5 s while c1 works a long section, renewing its
// lease, and then c1 waits 2.878 s after the nemesis killed the holder c2,
// until c2's lease has expired and c1's next attempt takes the lock: both
// waits are long, neither is a deadlock.
func TestDeadlockGolden(t *testing.T) {
	for _, c := range []struct {
		name    string
		want    Verdict
		longest int64
	}{
		{"deadlock", Invalid, 8001e6 - 326e6},
		{"long-wait", Valid, 8222e6 - 5344e6},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := load(t, c.name)
			in.Lease = Lease{TTL: 1e9}
			rs := checkAll(in)
			for name, r := range rs {
				want := Valid
				if name == "progress" {
					want = c.want
				}
				if r.Valid != want {
					t.Errorf("%s: %s (%s; %s), want %s", name, r.Valid, r.Summary, r.Reason, want)
				}
			}
			p := rs["progress"]
			wantCounts(t, p, map[string]int64{"longest_stall_ns": c.longest})
			if c.want == Valid {
				wantCounts(t, p, map[string]int64{"deadlocks": 0})
				if len(p.Anomalies) != 0 {
					t.Errorf("anomalies %+v in a run without a deadlock", p.Anomalies)
				}
				return
			}
			wantCounts(t, p, map[string]int64{"deadlocks": 1})
			a := anomaly(t, p, "deadlock")
			wantSame(t, "waiting clients", a.Clients, []string{"c1", "c2"})
			wantMentions(t, a, "from 0.326 s to 8.001 s", "7.7 × the 1.0 s TTL", "c1, c2 waited")
			if a.Time != 326e6 || len(a.Events) != 1 || a.Events[0] != 45 {
				t.Errorf("deadlock at %d, events %v: want 326 ms and the heal's invocation (45)", a.Time, a.Events)
			}
		})
	}
}

// TestKilledHolderGolden judges the progress checker's count of holders
// when the client that holds the lock is the one killed: in both runs the
// nemesis kills c2 right after its grant, at 0.325 s, while c1 waits. In
// deadlock-killed-holder nothing is granted again until the end at 8.0 s:
// the dead holder is no live client holding the lock, so c1's wait from
// the heal is a deadlock. In killed-holder-expires c2's lease runs out and
// c1 takes the lock at 1.402 s: a wait of 1.1 TTLs, no deadlock.
func TestKilledHolderGolden(t *testing.T) {
	for _, c := range []struct {
		name    string
		want    Verdict
		longest int64
	}{
		{"deadlock-killed-holder", Invalid, 8000e6 - 326e6},
		{"killed-holder-expires", Valid, 1402e6 - 326e6},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := load(t, c.name)
			in.Lease = Lease{TTL: 1e9}
			rs := checkAll(in)
			for name, r := range rs {
				want := Valid
				if name == "progress" {
					want = c.want
				}
				if r.Valid != want {
					t.Errorf("%s: %s (%s; %s), want %s", name, r.Valid, r.Summary, r.Reason, want)
				}
			}
			p := rs["progress"]
			wantCounts(t, p, map[string]int64{"longest_stall_ns": c.longest})
			if c.want == Valid {
				wantCounts(t, p, map[string]int64{"deadlocks": 0})
				return
			}
			wantCounts(t, p, map[string]int64{"deadlocks": 1})
			a := anomaly(t, p, "deadlock")
			wantSame(t, "waiting clients", a.Clients, []string{"c1"})
			wantMentions(t, a, "from 0.326 s to 8.000 s")
		})
	}
}

// TestUnavailableGolden holds unavailable_ns to hand-worked numbers on a
// pair of twins of killed-holder-expires with a 2 s TTL: the nemesis
// kills c2, the holder, at 0.325 s while c1 waits. In
// unavailable-killed-holder c1 is granted the lock at 2.402 s, once c2's
// lease ran out: valid, with the lock unavailable from the fault's start
// to that grant, 2402 − 325 = 2077 ms. In unavailable-killed-holder-late
// the grant comes only at 7.002 s, past 3 TTLs (6 s) from the heal at
// 0.326 s (a wait of 6.676 s): a deadlock, invalid, and unavailable for
// 7002 − 325 = 6677 ms. No acquire went unanswered: unreachable_ns is 0.
func TestUnavailableGolden(t *testing.T) {
	for _, c := range []struct {
		name        string
		want        Verdict
		unavailable int64
	}{
		{"unavailable-killed-holder", Valid, 2402e6 - 325e6},
		{"unavailable-killed-holder-late", Invalid, 7002e6 - 325e6},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := load(t, c.name)
			in.Lease = Lease{TTL: 2e9}
			rs := checkAll(in)
			for name, r := range rs {
				want := Valid
				if name == "progress" {
					want = c.want
				}
				if r.Valid != want {
					t.Errorf("%s: %s (%s; %s), want %s", name, r.Valid, r.Summary, r.Reason, want)
				}
			}
			p := rs["progress"]
			wantCounts(t, p, map[string]int64{"unavailable_ns": c.unavailable, "unreachable_ns": 0})
			if got := FaultUnavailability(in.History); len(got) != 1 || got[0] != c.unavailable {
				t.Errorf("FaultUnavailability %v, want the one fault's %d", got, c.unavailable)
			}
			if !strings.Contains(p.Summary, "the lock unavailable for "+seconds(c.unavailable)+" after 1 fault") {
				t.Errorf("summary %q does not tell the unavailability", p.Summary)
			}
		})
	}
}

// TestDeadlockNeedsALease: a run whose lock has no lease (cas, nolock), or
// whose TTL is unknown, has no time scale for a deadlock: no verdict on it.
func TestDeadlockNeedsALease(t *testing.T) {
	in := load(t, "deadlock")
	for _, l := range []Lease{{}, {None: "no lock", TTL: 1e9}} {
		in.Lease = l
		r := progress().Check(in)
		if _, judged := r.Counts["deadlocks"]; judged || r.Valid == Invalid {
			t.Errorf("lease %+v: %s with counts %v, want no deadlock verdict", l, r.Valid, r.Counts)
		}
	}
}

// TestFailOpenCosts: c1's acquire cannot reach the lock service (info) and,
// failing open, it writes without a token; c2's acquire fails the same way
// and it waits instead (closed); c3 holds the lock and writes with its
// token. The progress result counts both costs.
func TestFailOpenCosts(t *testing.T) {
	h := []history.Event{
		{Time: 1, Process: "c1", Type: history.Invoke, F: history.Acquire},
		{Time: 2, Process: "c1", Type: history.Info, F: history.Acquire, Error: "outcome unknown: dial tcp: i/o timeout"},
		{Time: 3, Process: "c2", Type: history.Invoke, F: history.Acquire},
		{Time: 4, Process: "c2", Type: history.Info, F: history.Acquire, Error: "outcome unknown: dial tcp: i/o timeout"},
		{Time: 5, Process: "c1", Type: history.Invoke, F: history.Write, Value: history.Int(1)},
		{Time: 6, Process: "c1", Type: history.OK, F: history.Write, Value: history.Int(1)},
		{Time: 7, Process: "c3", Type: history.Invoke, F: history.Acquire},
		{Time: 8, Process: "c3", Type: history.OK, F: history.Acquire, Token: 4},
		{Time: 9, Process: "c3", Type: history.Invoke, F: history.Write, Token: 4, Value: history.Int(2)},
		{Time: 10, Process: "c3", Type: history.OK, F: history.Write, Token: 4, Value: history.Int(2)},
	}
	r := progress().Check(Input{History: h, Lease: Lease{TTL: 1e9}})
	// c1 could not reach the service from its acquire at 1 until its
	// record ends at 6, c2 from 3 to 4: 5 ns in all.
	wantCounts(t, r, map[string]int64{"acquires_unknown": 2, "sections_unlocked": 1, "unreachable_ns": 5})
	if _, ok := r.Counts["unavailable_ns"]; ok {
		t.Errorf("unavailable_ns %d in a history with no fault", r.Counts["unavailable_ns"])
	}
	if !strings.Contains(r.Summary, "2 acquires got no answer from the lock service (clients could not reach it for 0.0 s), 1 section then ran without the lock") {
		t.Errorf("summary %q does not tell both costs", r.Summary)
	}
}

// TestServiceDownGolden judges four runs of one shape (a single Redis,
// TTL 1 s): c1 and c2 take turns until the nemesis kills the node at
// 2.000 s; the heal begins at 2.332 s, docker start returns at 2.900 s,
// and the service answers again only at 6.600 s, when turns resume. The
// clients ask for the lock every 0.1 s in between.
//   - down-info: no healthy event, and every acquire in between ends info
//     (connection refused): the clients could not reach the service, so
//     the 4.3 s after the heal began are unavailability, not a deadlock.
//   - down-fail, its twin: the same acquires end fail (the service said
//     the lock is taken) while no one holds it and no fault is in force
//     after the heal began: a deadlock, as a history without the healthy
//     event must still be judged.
//   - down-healthy: the acquires fail, but the nemesis recorded the
//     service healthy only at 6.600 s: the fault was in force until then.
//   - down-healthy-early, its twin: healthy at 2.950 s, and the lock still
//     refused to everyone for 3.6 s after: a deadlock.
//
// A healthy event that failed (the service never answered within the
// bound) keeps the fault in force to the end: down-healthy-early with that
// event failed is no deadlock.
func TestServiceDownGolden(t *testing.T) {
	for _, c := range []struct {
		name          string
		healthyFailed bool
		want          Verdict
		longest       int64
		unreachable   int64
		unavailable   int64
	}{
		{name: "down-info", want: Valid, longest: 0, unreachable: 6761e6 - 2010e6},
		{name: "down-fail", want: Invalid, longest: 6602e6 - 2332e6},
		// c1 waits from 2.010 s and c2 holds until its release at
		// 2.018 s; no one is granted the lock until 6.602 s.
		{name: "down-healthy", want: Valid, longest: 0, unavailable: 6602e6 - 2018e6},
		{name: "down-healthy-early", want: Invalid, longest: 6602e6 - 2950e6},
		{name: "down-healthy-early", healthyFailed: true, want: Valid, longest: 0},
	} {
		t.Run(fmt.Sprintf("%s/healthy-failed=%v", c.name, c.healthyFailed), func(t *testing.T) {
			in := load(t, c.name)
			in.Lease = Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}
			if c.healthyFailed {
				for i := range in.History {
					if e := &in.History[i]; e.F == history.Healthy {
						e.Type, e.Error = history.Fail, "the service did not answer its probe within 60 s"
					}
				}
			}
			rs := checkAll(in)
			for name, r := range rs {
				want := Valid
				if name == "progress" {
					want = c.want
				}
				if r.Valid != want {
					t.Errorf("%s: %s (%s; %s), want %s", name, r.Valid, r.Summary, r.Reason, want)
				}
			}
			p := rs["progress"]
			if c.longest > 0 {
				wantCounts(t, p, map[string]int64{"longest_stall_ns": c.longest})
			} else if got := p.Counts["longest_stall_ns"]; got >= 1e9 {
				t.Errorf("longest stall %d ns, want under a TTL", got)
			}
			wantCounts(t, p, map[string]int64{"unreachable_ns": c.unreachable})
			var sum int64
			for _, ns := range FaultUnavailability(in.History) {
				sum += ns
			}
			if got := p.Counts["unavailable_ns"]; got != sum || c.unavailable != 0 && got != c.unavailable {
				t.Errorf("unavailable_ns %d, want the faults' unavailability %d (by hand %d)", got, sum, c.unavailable)
			}
			if c.want == Invalid {
				a := anomaly(t, p, "deadlock")
				wantSame(t, "waiting clients", a.Clients, []string{"c1", "c2"})
			}
			// The exclusion result's faults carry the service's recovery
			// time, from the heal's end at 2.900 s to the healthy event.
			f := rs["exclusion"].Faults
			if len(f) != 1 {
				t.Fatalf("faults %+v, want the kill", f)
			}
			switch {
			case c.healthyFailed:
				if f[0].Healthy != 0 || f[0].Unhealthy == "" {
					t.Errorf("fault %+v, want it unhealthy with the reason", f[0])
				}
			case c.name == "down-healthy" && f[0].Healthy != 6600e6-2900e6,
				c.name == "down-healthy-early" && f[0].Healthy != 2950e6-2900e6,
				strings.HasPrefix(c.name, "down-") && !strings.Contains(c.name, "healthy") && f[0].Healthy != 0:
				t.Errorf("fault %+v: recovery time %d ns", f[0], f[0].Healthy)
			}
		})
	}
}

// TestInjectionInForce: the nemesis begins a kill at 2.000 s and records it
// injected only at 7.000 s (a loaded engine stopping two nodes); the heal
// begins at 7.100 s. The clients' acquires fail from 2.010 s on and no one
// holds the lock until 7.200 s: the fault was in force from its
// invocation, so no deadlock. Its twin, whose injection failed at 7.000 s
// (nothing was struck), leaves that 5 s wait a deadlock.
func TestInjectionInForce(t *testing.T) {
	build := func(outcome history.Type) []history.Event {
		h := append(sections(6, 0), history.Event{Time: 2e9, Process: history.Nemesis, Type: history.Invoke, F: history.Start, Fault: "kill"})
		for at := int64(2010e6); at < 7200e6; at += 100e6 {
			h = append(h, history.Event{Time: at, Process: "c2", Type: history.Invoke, F: history.Acquire},
				history.Event{Time: at + 1e6, Process: "c2", Type: history.Fail, F: history.Acquire, Error: "lock taken"})
			if at == 6910e6 {
				h = append(h, history.Event{Time: 7e9, Process: history.Nemesis, Type: outcome, F: history.Start, Fault: "kill", Targets: []string{"redis"}})
				if outcome == history.Info {
					h = append(h, history.Event{Time: 7.1e9, Process: history.Nemesis, Type: history.Invoke, F: history.Stop, Fault: "kill"},
						history.Event{Time: 7.15e9, Process: history.Nemesis, Type: history.Info, F: history.Stop, Fault: "kill"})
				}
			}
		}
		h = append(h, history.Event{Time: 7.2e9, Process: "c2", Type: history.Invoke, F: history.Acquire},
			history.Event{Time: 7.201e9, Process: "c2", Type: history.OK, F: history.Acquire, Token: 1})
		for i := range h {
			h[i].Index = int64(i)
		}
		return h
	}
	for _, c := range []struct {
		outcome history.Type
		want    Verdict
	}{{history.Info, Valid}, {history.Fail, Invalid}} {
		r := progress().Check(Input{History: build(c.outcome), Lease: Lease{TTL: 1e9}})
		if r.Valid != c.want {
			t.Errorf("injection ending %s: %s (%s), want %s", c.outcome, r.Valid, r.Summary, c.want)
		}
	}
}
