package e2e

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// linkRun is what a link-fault run left: its history, the store's log, and
// each fault's window and clients, with what the nemesis read back from
// inside those clients' containers just before the heal.
type linkRun struct {
	events []history.Event
	log    map[string]store.Entry // by request id
	faults []linkFault
}

type linkFault struct {
	start, stop int64 // the injection and the end of its heal
	targets     []string
	seen        string // the heal's invoke event's shape
}

// within reports whether e is an operation of a struck client that was
// invoked inside one of the faults, and returns that fault.
func (r linkRun) within(e history.Event, inv map[string]int64) (linkFault, bool) {
	for _, f := range r.faults {
		if slices.Contains(f.targets, e.Process) && inv[e.Process] >= f.start && inv[e.Process] <= f.stop {
			return f, true
		}
	}
	return linkFault{}, false
}

func readLinkRun(t *testing.T, dir string) linkRun {
	t.Helper()
	events, entries := readRun(t, dir)
	r := linkRun{events: events, log: map[string]store.Entry{}}
	for _, e := range entries {
		r.log[e.Req] = e
	}
	// A fault's window opens when the nemesis starts it: a client struck
	// at a failpoint goes on into its shaped links before the injection
	// is recorded.
	var started int64
	for _, e := range events {
		if e.Process != history.Nemesis || e.Fault != "link" {
			continue
		}
		switch {
		case e.F == history.Start && e.Type == history.Invoke:
			started = e.Time
		case e.F == history.Start && e.Type == history.Info:
			r.faults = append(r.faults, linkFault{start: started, stop: 1 << 62, targets: e.Targets})
		case e.F == history.Stop && e.Type == history.Invoke && len(r.faults) > 0:
			r.faults[len(r.faults)-1].seen = e.Shape
		case e.F == history.Stop && e.Type == history.Info && len(r.faults) > 0:
			if e.Error != "" {
				t.Errorf("heal failed: %s", e.Error)
			}
			r.faults[len(r.faults)-1].stop = e.Time
		}
	}
	if len(r.faults) == 0 {
		t.Fatal("no link fault was injected")
	}
	return r
}

// struckOps calls each completion of a store operation a struck client
// invoked during its fault, with the time it was invoked.
func (r linkRun) struckOps(each func(e history.Event, invoked int64, f linkFault)) {
	inv := map[string]int64{}
	for _, e := range r.events {
		if e.F != history.Read && e.F != history.Write {
			continue
		}
		if e.Type == history.Invoke {
			inv[e.Process] = e.Time
			continue
		}
		if f, ok := r.within(e, inv); ok {
			each(e, inv[e.Process], f)
		}
	}
}

// healedOps counts the store operations that the clients of the first
// fault completed after its heal: their links work again.
func (r linkRun) healedOps() int {
	first := r.faults[0]
	n := 0
	for _, e := range r.events {
		if e.Time > first.stop && e.Type == history.OK && (e.F == history.Read || e.F == history.Write) && slices.Contains(first.targets, e.Process) {
			n++
		}
	}
	return n
}

var dropped = regexp.MustCompile(`dropped (\d+) of (\d+) packets`)

// Each shape of the link fault strikes the holder's link to the store.
// Every shape is read back from inside the struck client's container just
// before its heal (the proxies' toxics, the firewall's counters), its
// effect is found in the history and the store's log, and the heal is
// proven there too: `lockbench link clear` reads the proxies back and
// fails if a fault is left, the loss's heal fails if a rule is left, and
// the struck client's requests go through again.
func TestLinkShapes(t *testing.T) {
	cases := []struct {
		shape string
		toxic string
		prove func(t *testing.T, r linkRun)
	}{
		{"reply-lost", "fault-reply-lost(timeout downstream", func(t *testing.T, r linkRun) {
			// A request applied whose reply never arrived: the client
			// counts it as unknown, the store's log has it.
			applied := 0
			r.struckOps(func(e history.Event, _ int64, _ linkFault) {
				if e.Type == history.Info && e.F == history.Write {
					if l, ok := r.log[e.Req]; ok && l.Outcome == store.Accepted {
						applied++
					}
				}
			})
			if applied == 0 {
				t.Error("no write of a struck client was applied while its reply was lost")
			}
		}},
		{"reset", "fault-reset(reset_peer downstream", func(t *testing.T, r linkRun) {
			resets := 0
			r.struckOps(func(e history.Event, _ int64, _ linkFault) {
				if e.Type == history.Info && strings.Contains(e.Error, "connection reset by peer") {
					resets++
				}
			})
			if resets == 0 {
				t.Error("no struck client saw a connection reset")
			}
		}},
		{"loss", "", func(t *testing.T, r linkRun) {
			// A client that waits for the lock sends the store nothing:
			// the counts are summed over the run's faults.
			var n, of int
			for _, f := range r.faults {
				m := dropped.FindStringSubmatch(f.seen)
				if m == nil {
					t.Fatalf("the lossy link's counters were not read back: %q", f.seen)
				}
				a, _ := strconv.Atoi(m[1])
				b, _ := strconv.Atoi(m[2])
				n, of = n+a, of+b
			}
			if n == 0 || n >= of {
				t.Errorf("dropped %d of %d packets, want some and not all", n, of)
			}
		}},
		// This run also has a steady round trip (--rtt 30ms): every
		// request of every client, before, during and after the faults,
		// takes at least that long, and the heal leaves it in place. The
		// one exception is Toxiproxy's: setting or clearing a toxic on a
		// link rebuilds its chain, and a latency toxic forwards what it
		// holds at once when interrupted, so a request of the struck
		// client in flight as the nemesis changed its link may skip the
		// rest of its delay (CI saw a write take 24 ms). Those, in the
		// second before each of that client's fault events (the event is
		// recorded once the change is read back), are left out.
		{"slow-close", "fault-slow-close(slow_close downstream map[delay:1000])", func(t *testing.T, r linkRun) {
			changed := map[string][]int64{} // client → its link's changes
			for _, e := range r.events {
				if e.Process == history.Nemesis && e.Type == history.Info {
					for _, c := range e.Targets {
						changed[c] = append(changed[c], e.Time)
					}
				}
			}
			nearChange := func(client string, from, to int64) bool {
				for _, at := range changed[client] {
					if from <= at+200e6 && to >= at-1e9 {
						return true
					}
				}
				return false
			}
			inv := map[string]int64{}
			n, spared := 0, 0
			for _, e := range r.events {
				if e.Process == history.Nemesis || strings.Contains(e.Process, "/") {
					continue
				}
				k := e.Process + " " + e.F
				if e.Type == history.Invoke {
					inv[k] = e.Time
					continue
				}
				if e.Type != history.OK || e.F == history.Acquire {
					continue
				}
				if nearChange(e.Process, inv[k], e.Time) {
					spared++
					continue
				}
				n++
				if d := e.Time - inv[k]; d < 30e6 {
					t.Errorf("%s %s took %.1f ms, under the round trip of 30 ms", e.Process, e.F, float64(d)/1e6)
				}
			}
			t.Logf("%d requests held to the round trip, %d in flight near a change of their link left out", n, spared)
			if n == 0 || spared > n/4 {
				t.Errorf("%d requests held to the round trip, %d left out: want most of them held", n, spared)
			}
			for _, f := range r.faults {
				if !strings.Contains(f.seen, "rtt-downstream(latency downstream map[jitter:0 latency:15])") {
					t.Errorf("read back before the heal: %q, want the round trip", f.seen)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.shape, func(t *testing.T) {
			side(t)
			// The clients think between sections: with none, a client
			// that lets the lock go takes it straight back (its next
			// acquire comes a round trip later, a waiting client's up to
			// 30 ms later), and the struck client may wait out the rest
			// of the run for it, with no request to prove the heal by
			// (CI saw that once).
			args := []string{"run", "--backend", "redis", "--nemesis", "link", "--link", c.shape, "--link-path", "store",
				"--think", "fixed:100ms",
				"--ttl", "1s", "--time-limit", "8s", "--nemesis-interval", "2s", "--fault-duration", "2s", "--seed", "3"}
			switch c.shape {
			case "slow-close":
				args = append(args, "--rtt", "30ms")
			case "reply-lost":
				// Struck at failpoint section, the holder's next request is
				// its write: the request whose reply is lost is one the
				// store applies. (Struck at random, it is often the read.)
				// Waiting for the point can put the strike late: 10 s leave
				// time after its heal to see the links work again.
				args = append(args, "--failpoint", "section", "--time-limit", "10s")
			}
			res := lockbench(t, nil, args...)
			// What the shapes prove is in the cluster and the history,
			// not in the verdict; unknown is one (CI saw progress unknown
			// under --rtt 30ms: four sections before an early first
			// fault, where the checker needs five to judge a stall).
			if res.exit > 2 {
				t.Fatalf("exit %d, want a verdict (valid, invalid or unknown)", res.exit)
			}
			assertNothingLeft(t, res.runID)
			r := readLinkRun(t, res.dir)
			for _, f := range r.faults {
				if !strings.Contains(f.seen, c.toxic) {
					t.Errorf("read back before the heal: %q, want %q", f.seen, c.toxic)
				}
				if c.shape != "loss" && !strings.Contains(f.seen, "store:7000") {
					t.Errorf("read back before the heal: %q, want the store's link", f.seen)
				}
				if strings.Contains(f.seen, "redis:6379: fault-") {
					t.Errorf("the lock's link was struck on --link-path store: %q", f.seen)
				}
			}
			c.prove(t, r)
			if n := r.healedOps(); n == 0 {
				t.Error("the struck client completed no store request after the heal")
			}
		})
	}
}

// Kleppmann's delayed packet: the holder's write to the store is held on
// the way for longer than its client waits, the client gives up on it and
// lets the lock go, another client takes the lock and writes, and then the
// held write lands. Without a fence it overwrites the newer holder's
// acknowledged increment; with --fence all the store turns it away.
// The delay strikes at failpoint section (read done, write ahead), so
// that it holds the write, and the clients think between sections, so
// that the lock is not taken straight back by the client that let it go.
func TestLinkDelayedWrite(t *testing.T) {
	for _, fence := range []string{"none", "all"} {
		t.Run("fence-"+fence, func(t *testing.T) {
			side(t)
			res := lockbench(t, nil, "run", "--backend", "redis", "--nemesis", "link", "--link", "delay", "--link-path", "store",
				"--link-delay", "3s", "--failpoint", "section", "--think", "fixed:300ms", "--fence", fence,
				"--ttl", "1s", "--time-limit", "10s", "--nemesis-interval", "2s", "--fault-duration", "4s", "--seed", "1")
			assertNothingLeft(t, res.runID)
			r := readLinkRun(t, res.dir)
			// The delayed reply, measured: a struck write that its client
			// gave up on reached the store more than a second after it
			// was sent (the delay is 3 s, give or take 1.5).
			late := 0
			r.struckOps(func(e history.Event, invoked int64, f linkFault) {
				if l, ok := r.log[e.Req]; ok && e.F == history.Write && e.Type == history.Info && l.Time-invoked > 1e9 {
					late++
				}
				if !strings.Contains(f.seen, "fault-delay(latency upstream map[jitter:1500 latency:3000])") {
					t.Errorf("read back before the heal: %q", f.seen)
				}
			})
			if late == 0 {
				t.Fatal("no struck write landed late")
			}
			rep := readReport(t, res.dir)
			lost, fenced := checker(t, rep, "lost-updates"), checker(t, rep, "fence")
			if fence == "none" {
				// The late write overwrites acknowledged increments: they
				// stay lost, or a writer whose read came before it writes
				// them back (CI saw that once), which lost-updates counts
				// as a repaired regression while fence still finds the
				// stale write the store accepted.
				overwrote := lost.Counts["lost_acknowledged"] > 0 || lost.Counts["regressions"] > 0
				if res.exit != 1 || !overwrote || fenced.Counts["stale_accepted"] == 0 {
					t.Fatalf("exit %d, lost-updates %s %v, fence %v: want the late write to overwrite an acknowledged increment", res.exit, lost.Valid, lost.Counts, fenced.Counts)
				}
				return
			}
			if res.exit != 0 || fenced.Counts["rejected_writes"] == 0 {
				t.Fatalf("exit %d, fence %v: want valid, the late write turned away", res.exit, fenced.Counts)
			}
			if rep.Evidence != "" {
				t.Errorf("evidence %q: a stale write reached the store", rep.Evidence)
			}
		})
	}
}
