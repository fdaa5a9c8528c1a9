package checkers

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// load reads testdata/<name>: a hand-written history and the store log that
// goes with it.
func load(t *testing.T, name string) Input {
	t.Helper()
	dir := filepath.Join("testdata", name)
	h, err := history.DecodeFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log, err := store.ReadLogFile(filepath.Join(dir, "store.log"))
	if err != nil {
		t.Fatal(err)
	}
	return Input{History: h, Store: log, Key: "x"}
}

// checkAll runs every checker (without a search bound, so verdicts are
// exact) and indexes the results by checker name.
func checkAll(in Input) map[string]Result {
	rs := map[string]Result{}
	for _, c := range All(0) {
		rs[c.Name()] = c.Check(in)
	}
	return rs
}

func anomaly(t *testing.T, r Result, kind string) Anomaly {
	t.Helper()
	for _, a := range r.Anomalies {
		if a.Kind == kind {
			return a
		}
	}
	t.Fatalf("%s: no %s anomaly in %+v", r.Checker, kind, r.Anomalies)
	return Anomaly{}
}

func wantCounts(t *testing.T, r Result, want map[string]int64) {
	t.Helper()
	for k, v := range want {
		if got := r.Counts[k]; got != v {
			t.Errorf("%s: count %s = %d, want %d (all counts %v)", r.Checker, k, got, v, r.Counts)
		}
	}
}

func wantMentions(t *testing.T, a Anomaly, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(a.Message, p) {
			t.Errorf("%s message %q does not mention %q", a.Kind, a.Message, p)
		}
	}
}

func wantSame[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.SortFunc(g, func(a, b T) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	slices.SortFunc(w, func(a, b T) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	if !slices.Equal(g, w) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		want map[string]Verdict
		// evidence checks what the results say beyond the verdicts.
		evidence func(t *testing.T, rs map[string]Result)
	}{
		{
			name: "serial",
			want: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, rs map[string]Result) {
				wantCounts(t, rs["linearizable"], map[string]int64{"sections": 4, "accepted": 3, "none": 1})
				wantCounts(t, rs["fence"], map[string]int64{"acquires": 4, "accepted_writes": 3, "stale_accepted": 0})
				wantCounts(t, rs["lost-updates"], map[string]int64{"acknowledged": 3, "unknown": 0, "final": 3, "lost_acknowledged": 0, "missing": 0, "regressions": 0})
			},
		},
		{
			// c1 (token 33) reads 5 and is paused past its lease; c2 (token 34)
			// reads 5 and writes 6; c1 resumes and its write of 6 is accepted.
			name: "stale-fence-none",
			want: map[string]Verdict{"linearizable": Invalid, "fence": Invalid, "lost-updates": Invalid},
			evidence: func(t *testing.T, rs map[string]Result) {
				lin := anomaly(t, rs["linearizable"], "non-linearizable")
				wantSame(t, "non-linearizable clients", lin.Clients, []string{"c1", "c2"})
				wantSame(t, "non-linearizable tokens", lin.Tokens, []int64{33, 34})
				wantMentions(t, lin, "places 6 of 7", "the counter is 6", "c2 (token 34) read 5 and wrote 6")
				wantSame(t, "non-linearizable events", lin.Events, []int64{42, 43, 47, 48, 49, 50, 54, 55})

				f := rs["fence"]
				wantCounts(t, f, map[string]int64{"stale_accepted": 1, "acquires": 7, "accepted_writes": 7, "rejected_writes": 0})
				stale := anomaly(t, f, "stale-write-accepted")
				wantSame(t, "stale clients", stale.Clients, []string{"c1", "c2"})
				wantSame(t, "stale tokens", stale.Tokens, []int64{33, 34})
				wantSame(t, "stale seqs", stale.StoreSeqs, []int64{14, 12})
				wantSame(t, "stale events", stale.Events, []int64{47, 48, 54, 55})
				wantMentions(t, stale, "c1 wrote 6 with token 33 at 3.015 s (store seq 14)", "token 34 from c2 (store seq 12", "overwrote 6")
				if stale.Time != 3015*1e6 {
					t.Errorf("stale write time = %d", stale.Time)
				}

				l := rs["lost-updates"]
				// c1's stale write erased c2's acknowledged increment and
				// nobody wrote after it: c2's write is the one lost.
				wantCounts(t, l, map[string]int64{"acknowledged": 7, "unknown": 0, "final": 6, "lost_acknowledged": 1, "missing": 1,
					"regressions": 1, "regressions_repaired": 0, "regressed_reads": 0})
				lost := anomaly(t, l, "lost-update")
				wantSame(t, "lost-update clients", lost.Clients, []string{"c2", "c1"})
				wantSame(t, "lost-update tokens", lost.Tokens, []int64{34, 33})
				wantSame(t, "lost-update seqs", lost.StoreSeqs, []int64{13, 14})
				wantSame(t, "lost-update events", lost.Events, []int64{49, 50, 54, 55})
				wantMentions(t, lost, "c2's acknowledged write of 6 (token 34, store seq 13", "c1 (token 33) wrote 6 over it", "its read of 5 (store seq 11), made before c2's write landed")
				reg := anomaly(t, l, "regression")
				wantMentions(t, reg, "c1 (token 33) wrote 6 over 6", "erasing 1 increment, 1 acknowledged (c2's write of 6)", "no later write restored them", "no read saw")
			},
		},
		{
			// The same story with a store that fences reads and writes: c1's
			// late write is rejected and nothing is lost.
			name: "stale-fence-all",
			want: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, rs map[string]Result) {
				wantCounts(t, rs["linearizable"], map[string]int64{"sections": 7, "accepted": 6, "rejected": 1})
				wantCounts(t, rs["fence"], map[string]int64{"rejected_writes": 1, "accepted_writes": 6, "stale_accepted": 0})
				wantCounts(t, rs["lost-updates"], map[string]int64{"acknowledged": 6, "final": 6, "lost_acknowledged": 0, "missing": 0})
			},
		},
		{
			// Write fencing only: c2 reads 5 with token 34, c1 writes 6 with
			// token 33 before c2 writes (no write has carried 34 yet, so the
			// store lets it through), then c2 writes 6 over it.
			name: "stale-fence-writes",
			want: map[string]Verdict{"linearizable": Invalid, "fence": Invalid, "lost-updates": Invalid},
			evidence: func(t *testing.T, rs map[string]Result) {
				stale := anomaly(t, rs["fence"], "stale-write-accepted")
				wantSame(t, "stale tokens", stale.Tokens, []int64{33, 34})
				wantSame(t, "stale seqs", stale.StoreSeqs, []int64{13, 12})
				wantMentions(t, stale, "c1 wrote 6 with token 33", "token 34 from c2", "overwrote 5")

				l := rs["lost-updates"]
				wantCounts(t, l, map[string]int64{"acknowledged": 7, "final": 6, "lost_acknowledged": 1, "missing": 1})
				lost := anomaly(t, l, "lost-update")
				wantSame(t, "lost-update clients", lost.Clients, []string{"c1", "c2"})
				wantMentions(t, lost, "c1's acknowledged write of 6 (token 33", "c2 (token 34) wrote 6 over it")
			},
		},
		{
			// c1 (token 33) reads 5 and is paused; c2 and c4 write 6 and 7;
			// c2 (token 36) reads 7, then c1's stale write of 6 lands, then
			// c2 writes 8, computed before it: the 2 erased increments come
			// back, and only c1's own increment is lost.
			name: "stale-repaired",
			want: map[string]Verdict{"linearizable": Invalid, "fence": Invalid, "lost-updates": Invalid},
			evidence: func(t *testing.T, rs map[string]Result) {
				l := rs["lost-updates"]
				wantCounts(t, l, map[string]int64{"acknowledged": 9, "unknown": 0, "final": 8, "lost_acknowledged": 1, "missing": 1,
					"regressions": 1, "regressions_repaired": 1, "regressed_reads": 0})
				lost := anomaly(t, l, "lost-update")
				wantSame(t, "lost-update seqs", lost.StoreSeqs, []int64{16, 17})
				wantSame(t, "lost-update clients", lost.Clients, []string{"c1", "c2"})
				wantMentions(t, lost, "c1's acknowledged write of 6 (token 33, store seq 16", "c2 (token 36) wrote 8 over it", "its read of 7 (store seq 15), made before c1's write landed")
				reg := anomaly(t, l, "regression")
				wantSame(t, "regression seqs", reg.StoreSeqs, []int64{16, 14, 12, 17})
				wantMentions(t, reg, "the value went back from 7 to 6, erasing 2 increments, 2 acknowledged (c4's write of 7, c2's write of 6)",
					"c2's write of 8 (store seq 17) restored them 21 ms later", "no read saw")
			},
		},
		{
			// The same pause, but c1's stale write lands between holders: c2
			// reads the regressed 6 and builds on it, so the 2 increments it
			// erased are gone for good.
			name: "stale-propagated",
			want: map[string]Verdict{"linearizable": Invalid, "fence": Invalid, "lost-updates": Invalid},
			evidence: func(t *testing.T, rs map[string]Result) {
				l := rs["lost-updates"]
				wantCounts(t, l, map[string]int64{"acknowledged": 10, "final": 8, "lost_acknowledged": 2, "missing": 2,
					"regressions": 1, "regressions_repaired": 0, "regressed_reads": 2})
				var lostSeqs []int64
				for _, a := range l.Anomalies {
					if a.Kind == "lost-update" {
						lostSeqs = append(lostSeqs, a.StoreSeqs[0])
						wantMentions(t, a, "c1 (token 33) wrote 6 over it")
					}
				}
				wantSame(t, "lost writes", lostSeqs, []int64{12, 14})
				wantMentions(t, anomaly(t, l, "regression"), "no later write restored them", "2 reads saw the regressed value (c2 read 6 at store seq 16, c5 read 7 at store seq 18)")
			},
		},
		{
			// No tokens: c1 and c2 both read 5 and write 6, c2 first; c4's
			// write of 7 times out but lands. 7 acknowledged and final 7
			// balance, yet c2's acknowledged increment is lost.
			name: "tokenless-masked",
			want: map[string]Verdict{"linearizable": Invalid, "fence": Skipped, "lost-updates": Invalid},
			evidence: func(t *testing.T, rs map[string]Result) {
				l := rs["lost-updates"]
				wantCounts(t, l, map[string]int64{"acknowledged": 7, "unknown": 1, "unknown_applied": 1, "final": 7, "lost_acknowledged": 1, "missing": 1})
				wantMentions(t, anomaly(t, l, "lost-update"), "c2's acknowledged write of 6 (store seq", "c1 wrote 6 over it")
			},
		},
		{
			// c1's write times out but landed; c2's times out and never
			// reached the store; c1's last write was in flight when the run
			// stopped, and landed.
			name: "unknown-writes",
			want: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, rs map[string]Result) {
				wantCounts(t, rs["linearizable"], map[string]int64{"sections": 4, "accepted": 1, "unknown": 3})
				wantCounts(t, rs["lost-updates"], map[string]int64{"acknowledged": 1, "unknown": 3, "unknown_applied": 2, "final": 3, "missing": 0})
			},
		},
		{
			// c2 is granted 9 after c1 was granted 10; c1 is later granted
			// c3's 11 again. c4's 8 is fine: c4 asked before c1 got 10.
			name: "token-order",
			want: map[string]Verdict{"linearizable": Valid, "fence": Invalid, "lost-updates": Valid},
			evidence: func(t *testing.T, rs map[string]Result) {
				f := rs["fence"]
				wantCounts(t, f, map[string]int64{"acquires": 5, "token_order": 1, "duplicate_token": 1})
				order := anomaly(t, f, "token-order")
				wantSame(t, "token-order clients", order.Clients, []string{"c2", "c1"})
				wantSame(t, "token-order tokens", order.Tokens, []int64{9, 10})
				wantMentions(t, order, "c2 was granted token 9 at 0.210 s", "token 10 that c1 had been granted at 0.110 s")
				dup := anomaly(t, f, "duplicate-token")
				wantSame(t, "duplicate clients", dup.Clients, []string{"c1", "c3"})
				wantSame(t, "duplicate tokens", dup.Tokens, []int64{11})
				wantSame(t, "duplicate events", dup.Events, []int64{13, 17})
			},
		},
		{
			// c2's acknowledged write is missing from the store log.
			name: "store-mismatch",
			want: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Unknown},
			evidence: func(t *testing.T, rs map[string]Result) {
				l := rs["lost-updates"]
				if !strings.Contains(l.Reason, `"c2-2"`) || !strings.Contains(l.Reason, "no such request") {
					t.Errorf("reason %q does not name c2-2", l.Reason)
				}
				wantCounts(t, l, map[string]int64{"acknowledged": 2, "final": 1})
			},
		},
		{
			// c1 reads 0 and writes 1; c2 reads 1 and writes 2. The twin
			// of write-value-differs.
			name: "write-value-agrees",
			want: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, rs map[string]Result) {
				wantCounts(t, rs["linearizable"], map[string]int64{"sections": 2, "accepted": 2})
				wantCounts(t, rs["lost-updates"], map[string]int64{"acknowledged": 2, "final": 2, "missing": 0})
			},
		},
		{
			// The same run, but the history says c1 wrote 3 where the store
			// log has the same request store 1. By the history's 3 the
			// sections are not linearizable; by the log's 1 nothing is lost.
			// One record is wrong, so neither verdict stands.
			name: "write-value-differs",
			want: map[string]Verdict{"linearizable": Unknown, "fence": Valid, "lost-updates": Unknown},
			evidence: func(t *testing.T, rs map[string]Result) {
				const why = `the history and the store log disagree: write "c1-2" by c1 (event 4) wrote 3, but the store log has it store 1 at seq 2`
				for _, name := range []string{"linearizable", "lost-updates"} {
					if r := rs[name].Reason; r != why {
						t.Errorf("%s reason %q, want %q", name, r, why)
					}
				}
				wantCounts(t, rs["linearizable"], map[string]int64{"sections": 2, "accepted": 2})
			},
		},
		{
			// write-value-agrees and c3, whose write (req c3-2) timed out
			// before the store saw it. The twin of req-repeated.
			name: "req-distinct",
			want: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, rs map[string]Result) {
				wantCounts(t, rs["lost-updates"], map[string]int64{"acknowledged": 2, "unknown": 1, "unknown_applied": 0, "final": 2, "missing": 0})
			},
		},
		{
			// The same run, but c3's write carries c2's req, c2-2: joined by
			// it, c3's timed-out write would take over c2's log entry.
			// Repeated, as a repeat in the store log is, it leaves the data
			// unjudged; the history alone is still linearizable.
			name: "req-repeated",
			want: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Unknown},
			evidence: func(t *testing.T, rs map[string]Result) {
				const why = `the history and the store log disagree: the history has req "c2-2" twice (events 12 and 20)`
				if r := rs["lost-updates"].Reason; r != why {
					t.Errorf("lost-updates reason %q, want %q", r, why)
				}
			},
		},
		{
			name: "no-tokens",
			want: map[string]Verdict{"linearizable": Valid, "fence": Skipped, "lost-updates": Valid},
			evidence: func(t *testing.T, rs map[string]Result) {
				if r := rs["fence"].Reason; r != "the lock issues no fencing tokens" {
					t.Errorf("fence reason = %q", r)
				}
				wantCounts(t, rs["fence"], map[string]int64{"acquires": 2})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := checkAll(load(t, tt.name))
			for name, want := range tt.want {
				if got := rs[name].Valid; got != want {
					t.Errorf("%s = %s, want %s: %s %s %+v", name, got, want, rs[name].Summary, rs[name].Reason, rs[name].Anomalies)
				}
			}
			for name, r := range rs {
				if r.Summary == "" || strings.Contains(r.Summary, "\n") {
					t.Errorf("%s summary %q is not one line", name, r.Summary)
				}
				if (r.Valid == Unknown || r.Valid == Skipped) != (r.Reason != "") {
					t.Errorf("%s is %s with reason %q", name, r.Valid, r.Reason)
				}
			}
			tt.evidence(t, rs)
		})
	}
}

// A write the history calls failed but the store applied means one of the
// two records is wrong, so the count proves nothing.
func TestLostUpdatesFailedWriteAccepted(t *testing.T) {
	in := load(t, "stale-fence-all")
	for i := range in.Store {
		if in.Store[i].Req == "c1-2" {
			in.Store[i].Outcome = store.Accepted
		}
	}
	r := LostUpdates{}.Check(in)
	if r.Valid != Unknown || !strings.Contains(r.Reason, `"c1-2"`) || !strings.Contains(r.Reason, "failed") {
		t.Errorf("got %s (%s), want unknown naming c1-2", r.Valid, r.Reason)
	}
}

// After the stale write, c4's write of 7 times out but lands: the count
// (final 7, 7 acknowledged, 1 unknown) is consistent, yet c2's acknowledged
// write was still erased.
func TestLostUpdatesAcknowledgedWriteErased(t *testing.T) {
	in := load(t, "stale-fence-none")
	n := int64(len(in.History))
	for i, e := range []history.Event{
		{Time: 4000e6, Type: history.Invoke, F: history.Acquire},
		{Time: 4010e6, Type: history.OK, F: history.Acquire, Token: 35},
		{Time: 4020e6, Type: history.Invoke, F: history.Read, Key: "x", Token: 35, Req: "c4-1"},
		{Time: 4030e6, Type: history.OK, F: history.Read, Key: "x", Token: 35, Req: "c4-1", Value: history.Int(6)},
		{Time: 4040e6, Type: history.Invoke, F: history.Write, Key: "x", Token: 35, Req: "c4-2", Value: history.Int(7)},
		{Time: 5040e6, Type: history.Info, F: history.Write, Key: "x", Token: 35, Req: "c4-2", Error: "timeout"},
	} {
		e.Index, e.Process = n+int64(i), "c4"
		in.History = append(in.History, e)
	}
	in.Store = append(in.Store,
		store.Entry{Seq: 15, Time: 4025e6, Req: "c4-1", Client: "c4", Op: "read", Key: "x", Token: 35, Value: 6, Prev: 6, Outcome: store.Accepted},
		store.Entry{Seq: 16, Time: 4045e6, Req: "c4-2", Client: "c4", Op: "write", Key: "x", Token: 35, Value: 7, Prev: 6, Outcome: store.Accepted})
	r := LostUpdates{}.Check(in)
	wantCounts(t, r, map[string]int64{"acknowledged": 7, "unknown": 1, "unknown_applied": 1, "final": 7, "lost_acknowledged": 1, "missing": 1})
	if r.Valid != Invalid {
		t.Fatalf("got %s (%s), want invalid", r.Valid, r.Summary)
	}
	wantMentions(t, anomaly(t, r, "lost-update"), "c2's acknowledged write of 6 (token 34")
}

// A req repeated by two requests the store never saw takes over no entry,
// but it is as impossible as any repeat: c3's read times out unlogged, and
// its write, which timed out too, carries the read's req.
func TestLostUpdatesRepeatedUnloggedReq(t *testing.T) {
	for _, repeat := range []bool{false, true} {
		in := load(t, "req-distinct")
		in.History[19].Type, in.History[19].Value, in.History[19].Error = history.Info, nil, "timeout"
		in.Store = slices.DeleteFunc(in.Store, func(e store.Entry) bool { return e.Req == "c3-1" })
		if repeat {
			in.History[20].Req, in.History[21].Req = "c3-1", "c3-1"
		}
		r := LostUpdates{}.Check(in)
		switch why := `the history has req "c3-1" twice (events 18 and 20)`; {
		case repeat && (r.Valid != Unknown || !strings.Contains(r.Reason, why)):
			t.Errorf("repeated: %s (%s), want unknown saying %s", r.Valid, r.Reason, why)
		case !repeat && r.Valid != Valid:
			t.Errorf("distinct: %s (%s), want valid", r.Valid, r.Reason)
		}
	}
}

func TestChecksAreDeterministic(t *testing.T) {
	in := load(t, "stale-fence-none")
	first := checkAll(in)
	for range 20 {
		if again := checkAll(in); !reflect.DeepEqual(first, again) {
			t.Fatalf("results differ between runs:\n%+v\n%+v", first, again)
		}
	}
}

// concurrentHistory has n clients whose sections overlap completely, each
// reading 0 and timing out on its write, plus one that read 99: illegal, but
// proving it means trying every subset of the others.
func concurrentHistory(n int) []history.Event {
	var h []history.Event
	add := func(e history.Event) {
		e.Index = int64(len(h))
		h = append(h, e)
	}
	for c := 1; c <= n+1; c++ {
		p := fmt.Sprintf("c%d", c)
		v := int64(0)
		if c == n+1 {
			v = 99
		}
		add(history.Event{Time: int64(c), Process: p, Type: history.Invoke, F: history.Read, Key: "x", Token: int64(c)})
		add(history.Event{Time: 1000 + int64(c), Process: p, Type: history.OK, F: history.Read, Key: "x", Value: history.Int(v), Token: int64(c)})
		add(history.Event{Time: 2000 + int64(c), Process: p, Type: history.Invoke, F: history.Write, Key: "x", Value: history.Int(v + 1), Token: int64(c)})
	}
	for c := 1; c <= n+1; c++ {
		add(history.Event{Time: 3000 + int64(c), Process: fmt.Sprintf("c%d", c), Type: history.Info, F: history.Write, Key: "x", Error: "timeout"})
	}
	return h
}

func TestLinearizableTimeoutIsUnknown(t *testing.T) {
	r := Linearizable{Timeout: 50 * time.Millisecond}.Check(Input{History: concurrentHistory(40), Key: "x"})
	if r.Valid != Unknown {
		t.Fatalf("got %s (%s), want unknown", r.Valid, r.Summary)
	}
	if r.Reason != "linearizability check timed out after 50ms" {
		t.Errorf("reason = %q", r.Reason)
	}
}

// The bound holds across the pieces of a long history too.
func TestLinearizableTimeoutIsUnknownInPieces(t *testing.T) {
	r := Linearizable{Timeout: time.Nanosecond}.Check(serialHistory(5000))
	if r.Valid != Unknown {
		t.Fatalf("got %s (%s), want unknown", r.Valid, r.Summary)
	}
}

// The exported pieces are enough for someone else to draw porcupine's view.
func TestSectionsVisualize(t *testing.T) {
	in := load(t, "stale-fence-none")
	ss := Sections(in.History, in.Key)
	if len(ss) != 7 {
		t.Fatalf("got %d sections, want 7", len(ss))
	}
	c1 := ss[5]
	want := Section{Client: "c1", ClientID: 0, Token: 33, Read: 5, Write: 6, Outcome: WriteAccepted,
		Call: 1020e6, Return: 3020e6, Events: []int64{42, 43, 54, 55}}
	if !reflect.DeepEqual(c1, want) {
		t.Errorf("c1's section = %+v, want %+v", c1, want)
	}
	if ss[0].ClientID != 2 {
		t.Errorf("c3's client id = %d, want 2", ss[0].ClientID)
	}
	model := CounterModel()
	res, info := porcupine.CheckOperationsVerbose(model, Operations(ss), 0)
	if res != porcupine.Illegal {
		t.Fatalf("porcupine says %s", res)
	}
	if err := porcupine.Visualize(model, info, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := model.DescribeOperation(c1, nil); got != "c1 t33: read 5, wrote 6" {
		t.Errorf("DescribeOperation = %q", got)
	}
}

func TestSectionsEndings(t *testing.T) {
	unknown := Sections(load(t, "unknown-writes").History, "x")
	end := int64(2350e6) // the last event: c1's write invocation
	for _, i := range []int{0, 1, 3} {
		if s := unknown[i]; s.Outcome != WriteUnknown || s.Return != end {
			t.Errorf("section %d = %+v, want unknown outcome returning at the end %d", i, s, end)
		}
	}
	serial := Sections(load(t, "serial").History, "x")
	lost := serial[3]
	if lost.Outcome != NoWrite || lost.Return != 430e6 || !slices.Equal(lost.Events, []int64{28, 29, 30}) {
		t.Errorf("lease-lost section = %+v", lost)
	}
	if other := Sections(load(t, "serial").History, "y"); len(other) != 0 {
		t.Errorf("key y has sections %+v", other)
	}
}

// serialHistory has n clean critical sections taken in turn by five clients,
// with a store log to match.
func serialHistory(n int) Input {
	var in Input
	var tm int64
	ev := func(p string, typ history.Type, f string, e history.Event) {
		tm += 10
		e.Index, e.Time, e.Process, e.Type, e.F = int64(len(in.History)), tm, p, typ, f
		in.History = append(in.History, e)
	}
	for i := range n {
		p, tok, v := fmt.Sprintf("c%d", i%5+1), int64(i+1), int64(i)
		read, write := fmt.Sprintf("%s-r%d", p, i), fmt.Sprintf("%s-w%d", p, i)
		ev(p, history.Invoke, history.Acquire, history.Event{})
		ev(p, history.OK, history.Acquire, history.Event{Token: tok, Attempt: tm + 5})
		ev(p, history.Invoke, history.Read, history.Event{Key: "x", Token: tok, Req: read})
		in.Store = append(in.Store, store.Entry{Seq: int64(len(in.Store) + 1), Time: tm + 5, Req: read, Client: p,
			Op: "read", Key: "x", Token: tok, Value: v, Prev: v, Outcome: store.Accepted})
		ev(p, history.OK, history.Read, history.Event{Key: "x", Token: tok, Req: read, Value: history.Int(v)})
		ev(p, history.Invoke, history.Write, history.Event{Key: "x", Token: tok, Req: write, Value: history.Int(v + 1)})
		in.Store = append(in.Store, store.Entry{Seq: int64(len(in.Store) + 1), Time: tm + 5, Req: write, Client: p,
			Op: "write", Key: "x", Token: tok, Value: v + 1, Prev: v, Outcome: store.Accepted})
		ev(p, history.OK, history.Write, history.Event{Key: "x", Token: tok, Req: write})
		ev(p, history.Invoke, history.Release, history.Event{Token: tok})
		ev(p, history.OK, history.Release, history.Event{Token: tok})
	}
	in.Key = "x"
	in.Lease = redisLease
	return in
}

// A long clean run must pass every checker quickly: nothing may be quadratic
// in the history.
func TestLongSerialHistory(t *testing.T) {
	const n = 20000
	in := serialHistory(n)
	start := time.Now()
	for name, r := range checkAll(in) {
		if r.Valid != Valid {
			t.Errorf("%s = %s: %s %s", name, r.Valid, r.Summary, r.Reason)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("checking %d sections took %s", n, d)
	}
}

func TestOverall(t *testing.T) {
	r := func(vs ...Verdict) []Result {
		var out []Result
		for _, v := range vs {
			out = append(out, Result{Valid: v})
		}
		return out
	}
	tests := []struct {
		rs   []Result
		want Verdict
	}{
		{r(Valid, Valid, Valid), Valid},
		{r(Valid, Skipped, Valid), Valid},
		{r(Valid, Unknown, Valid), Unknown},
		{r(Unknown, Invalid, Valid), Invalid},
		{r(Skipped, Invalid), Invalid},
		{r(Skipped, Skipped), Unknown},
		{r(Skipped, Unknown), Unknown},
		{nil, Unknown},
	}
	for _, tt := range tests {
		var vs []Verdict
		for _, x := range tt.rs {
			vs = append(vs, x.Valid)
		}
		if got := Overall(tt.rs); got != tt.want {
			t.Errorf("Overall(%v) = %s, want %s", vs, got, tt.want)
		}
	}
}

func TestAllOrder(t *testing.T) {
	var names []string
	for _, c := range All(time.Second) {
		names = append(names, c.Name())
	}
	if want := []string{"linearizable", "fence", "lost-updates", "exclusion", "progress"}; !slices.Equal(names, want) {
		t.Errorf("All() = %v, want %v", names, want)
	}
}

// A search that would grow the heap past its budget ends as unknown with
// the reason, not as a guess: the concurrent history makes porcupine's
// search explode, and a 1-byte budget runs out at once.
func TestLinearizableMemoryBudgetIsUnknown(t *testing.T) {
	r := Linearizable{Timeout: time.Minute, MemoryBudget: 1}.Check(Input{History: concurrentHistory(40), Key: "x"})
	if r.Valid != Unknown {
		t.Fatalf("got %s (%s), want unknown", r.Valid, r.Summary)
	}
	if !strings.Contains(r.Reason, "memory budget") {
		t.Errorf("reason = %q", r.Reason)
	}
}

// A prepared input's ledger is built once for its two readers, then let
// go; a reader that checks again, or an input whose store log is another,
// builds its own.
func TestLedgerSharedOnce(t *testing.T) {
	in := Prepare(load(t, "write-value-differs"))
	other := in
	other.Store = in.Store[1:]
	data, linear := in.ledger(dataReader), in.ledger(linearReader)
	switch {
	case data != linear:
		t.Error("the data and linearizability checkers read different ledgers")
	case in.shared.ledger != nil:
		t.Error("the ledger is kept after both readers took it")
	case in.ledger(dataReader) == data:
		t.Error("a second look got the ledger that was let go")
	case other.ledger(dataReader) == data || len(other.ledger(dataReader).log) != len(in.Store)-1:
		t.Error("an input with another store log took the prepared ledger")
	}
	if data.written == "" {
		t.Error("the ledger found no write value differing")
	}
}
