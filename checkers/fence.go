package checkers

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// Fence checks the two halves of fencing: the lock must hand out tokens that
// grow in real time, and the store must not accept a write carrying a token
// older than one it has already accepted.
type Fence struct{}

func (Fence) Name() string { return "fence" }

// grant is an acquire that succeeded with a token.
type grant struct {
	client           string
	token            int64
	invoke, ok       int64 // times
	invokeIdx, okIdx int64 // history indexes
}

func (c Fence) Check(in Input) Result {
	r := newResult(c.Name())
	zero(r.Counts, "acquires", "accepted_writes", "rejected_writes", "rejected_reads", "stale_accepted", "token_order", "duplicate_token")
	var grants []grant
	for _, o := range history.Pair(in.History) {
		if o.F != history.Acquire || o.Lone || o.Type != history.OK {
			continue
		}
		r.Counts["acquires"]++
		if o.Ret.Token > 0 {
			grants = append(grants, grant{
				client: o.Process, token: o.Ret.Token,
				invoke: o.Call.Time, ok: o.Ret.Time,
				invokeIdx: o.Call.Index, okIdx: o.Ret.Index,
			})
		}
	}
	log := storeOnKey(in.Store, in.Key)
	for _, e := range log {
		switch {
		case e.Op == "write" && e.Outcome == store.Accepted:
			r.Counts["accepted_writes"]++
		case e.Op == "write":
			r.Counts["rejected_writes"]++
		case e.Outcome == store.Rejected:
			r.Counts["rejected_reads"]++
		}
	}
	if len(grants) == 0 {
		r.Valid = Skipped
		r.Reason = "the lock issues no fencing tokens"
		r.Summary = "skipped: no acquire carried a fencing token"
		return r
	}
	staleWrites(&r, log, reqEvents(in.History))
	tokenOrder(&r, grants)

	r.Valid = Valid
	if len(r.Anomalies) > 0 {
		r.Valid = Invalid
	}
	r.Summary = fmt.Sprintf("%s accepted, %s rejected by the store; %s out of order, %s in %s",
		plural(r.Counts["stale_accepted"], "stale write"),
		plural(r.Counts["rejected_writes"]+r.Counts["rejected_reads"], "stale request"),
		plural(r.Counts["token_order"], "token"),
		plural(r.Counts["duplicate_token"], "duplicate token"), plural(r.Counts["acquires"], "acquire"))
	return r
}

// staleWrites finds accepted writes whose token is older than one the store
// had already accepted, on a read or a write: once a newer holder has
// touched the resource, the old holder's lease is over whatever the store's
// fence mode lets through.
func staleWrites(r *Result, log []store.Entry, reqs map[string][]int64) {
	var newest *store.Entry
	for i := range log {
		e := &log[i]
		if e.Outcome != store.Accepted {
			continue
		}
		if e.Op == "write" && newest != nil && e.Token < newest.Token {
			r.add("stale_accepted", Anomaly{
				Kind: "stale-write-accepted",
				Message: fmt.Sprintf("%s wrote %d with token %d at %s (store seq %d) and the store accepted it, "+
					"although it had already accepted token %d from %s (store seq %d, %s); the write overwrote %d.",
					e.Client, e.Value, e.Token, history.Seconds(e.Time), e.Seq,
					newest.Token, newest.Client, newest.Seq, history.Seconds(newest.Time), e.Prev),
				Events:    sortedConcat(reqs[e.Req], reqs[newest.Req]),
				StoreSeqs: []int64{e.Seq, newest.Seq},
				Clients:   []string{e.Client, newest.Client},
				Tokens:    []int64{e.Token, newest.Token},
				Time:      e.Time,
			})
		}
		if e.Token > 0 && (newest == nil || e.Token > newest.Token) {
			newest = e
		}
	}
}

// tokenOrder checks that a grant completed before another was asked for
// carries the smaller token, and that no token is granted twice. Sweeping
// the requests in invocation order while folding in grants completed before
// each keeps it O(n log n).
func tokenOrder(r *Result, grants []grant) {
	byInvoke := slices.Clone(grants)
	slices.SortFunc(byInvoke, func(a, b grant) int {
		return cmp.Or(cmp.Compare(a.invoke, b.invoke), cmp.Compare(a.invokeIdx, b.invokeIdx))
	})
	byOK := slices.Clone(grants)
	slices.SortFunc(byOK, func(a, b grant) int {
		return cmp.Or(cmp.Compare(a.ok, b.ok), cmp.Compare(a.okIdx, b.okIdx))
	})

	// Equal tokens are left to the duplicate check, so each pair is
	// reported once.
	var highest *grant
	j := 0
	for _, b := range byInvoke {
		for ; j < len(byOK) && byOK[j].ok < b.invoke; j++ {
			if highest == nil || byOK[j].token > highest.token {
				highest = &byOK[j]
			}
		}
		if highest == nil || highest.token <= b.token {
			continue
		}
		r.add("token_order", Anomaly{
			Kind: "token-order",
			Message: fmt.Sprintf("%s was granted token %d at %s, lower than token %d that %s had been granted at %s, "+
				"before %s asked at %s.",
				b.client, b.token, history.Seconds(b.ok), highest.token, highest.client, history.Seconds(highest.ok),
				b.client, history.Seconds(b.invoke)),
			Events:  []int64{highest.okIdx, b.invokeIdx, b.okIdx},
			Clients: []string{b.client, highest.client},
			Tokens:  []int64{b.token, highest.token},
			Time:    b.ok,
		})
	}

	first := map[int64]grant{}
	for _, g := range byOK {
		f, ok := first[g.token]
		if !ok {
			first[g.token] = g
			continue
		}
		r.add("duplicate_token", Anomaly{
			Kind: "duplicate-token",
			Message: fmt.Sprintf("%s was granted token %d at %s, which %s had already been granted at %s.",
				g.client, g.token, history.Seconds(g.ok), f.client, history.Seconds(f.ok)),
			Events:  []int64{f.okIdx, g.okIdx},
			Clients: []string{g.client, f.client},
			Tokens:  []int64{g.token},
			Time:    g.ok,
		})
	}
}

func sortedConcat(a, b []int64) []int64 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
