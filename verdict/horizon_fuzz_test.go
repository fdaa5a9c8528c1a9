package verdict

import (
	"math"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// FuzzHorizon holds cut to its rule on histories of a harness that died
// amid kill-client kills and pauses, of either fault's heal or none: the
// horizon is the earliest last event of the clients whose silence no fault
// explains, where a client killed by kill-client is explained for good
// and a client is explained by a pause still in force at the end (one
// that no later stop of pause healed). The oracle below states the rule
// by brute force over each client's own events, apart from cut's single
// pass.
func FuzzHorizon(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{4, 0, 4, 9, 1, 3, 3, 3, 2, 7, 5, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		clients := []string{"c1", "c2", "c3"}
		var h []history.Event
		at := int64(0)
		for _, b := range prog {
			at += int64(b%7) * 1e6
			c := clients[int(b/7)%len(clients)]
			switch b % 5 {
			case 0, 1, 2:
				h = append(h, history.Event{Time: at, Process: c, Type: history.Invoke, F: history.Read})
			case 3:
				fault := []string{"pause", history.KillClient}[int(b/35)%2]
				h = append(h, history.Event{Time: at, Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: fault, Targets: []string{c}})
			case 4:
				fault := []string{"pause", history.KillClient}[int(b/35)%2]
				h = append(h, history.Event{Time: at, Process: history.Nemesis, Type: history.Info, F: history.Stop, Fault: fault})
			}
		}
		for i := range h {
			h[i].Index = int64(i)
		}
		kept, _, _ := cut(h, nil)
		want := oracleHorizon(h, clients)
		for _, e := range h {
			if in := slices.ContainsFunc(kept, func(k history.Event) bool { return k.Index == e.Index }); in != (e.Time <= want) {
				t.Fatalf("event %+v kept %v, want the horizon at %d\n%+v", e, in, want, h)
			}
		}
	})
}

// oracleHorizon is the rule, client by client.
func oracleHorizon(h []history.Event, clients []string) int64 {
	horizon := int64(math.MaxInt64)
	for _, c := range clients {
		last, seen, explained := int64(0), false, false
		for i, e := range h {
			if e.Process == c {
				last, seen = max(last, e.Time), true
			}
			if e.Process != history.Nemesis || e.F != history.Start || !slices.Contains(e.Targets, c) {
				continue
			}
			if e.Fault == history.KillClient {
				explained = true
				continue
			}
			// A pause on c explains its silence unless a later stop of
			// pause healed it.
			healed := slices.ContainsFunc(h[i+1:], func(s history.Event) bool {
				return s.Process == history.Nemesis && s.F == history.Stop && s.Fault == e.Fault
			})
			explained = explained || !healed
		}
		if seen && !explained {
			horizon = min(horizon, last)
		}
	}
	return horizon
}
