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

// grant is an acquire that succeeded with a token. It holds no pointers,
// so that a million of them cost the garbage collector nothing.
type grant struct {
	token            int64
	invoke, ok       int64 // times
	invokeIdx, okIdx int64 // history indexes
	call, ret        int32 // positions in the history
}

func (g grant) client(h []history.Event) string { return h[g.call].Process }

func (c Fence) Check(in Input) Result {
	r := newResult(c.Name())
	zero(r.Counts, "acquires", "accepted_writes", "rejected_writes", "rejected_reads", "stale_accepted", "token_order", "duplicate_token")
	h := in.History
	var acquires int64
	ops, _ := in.Refs()
	grants := make([]grant, 0, calls(h, ops, history.Acquire))
	for _, o := range ops {
		call, ret := &h[o.Call], &h[o.Ret]
		if call.F != history.Acquire || o.Lone() || o.Type(h) != history.OK {
			continue
		}
		acquires++
		if ret.Token > 0 {
			grants = append(grants, grant{
				token:  ret.Token,
				invoke: call.Time, ok: ret.Time,
				invokeIdx: call.Index, okIdx: ret.Index,
				call: o.Call, ret: o.Ret,
			})
		}
	}
	r.Counts["acquires"] = acquires
	log := storeOnKey(in.Store, in.Key)
	var acceptedWrites, rejectedWrites, rejectedReads int64
	for i := range log {
		e := &log[i]
		switch {
		case e.Op == "write" && e.Outcome == store.Accepted:
			acceptedWrites++
		case e.Op == "write":
			rejectedWrites++
		case e.Outcome == store.Rejected:
			rejectedReads++
		}
	}
	r.Counts["accepted_writes"], r.Counts["rejected_writes"], r.Counts["rejected_reads"] = acceptedWrites, rejectedWrites, rejectedReads
	if len(grants) == 0 {
		r.Valid = Skipped
		r.Reason = "the lock issues no fencing tokens"
		r.Summary = "skipped: no acquire carried a fencing token"
		return r
	}
	if withoutStore(&r, in) {
		return r
	}
	var links reqLinks
	staleWrites(&r, log, &links)
	links.resolve(h, r.Anomalies)
	tokenOrder(&r, h, grants)

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
func staleWrites(r *Result, log []store.Entry, links *reqLinks) {
	var newest *store.Entry
	for i := range log {
		e := &log[i]
		if e.Outcome != store.Accepted {
			continue
		}
		if e.Op == "write" && newest != nil && e.Token < newest.Token && r.tally("stale_accepted") {
			links.link(len(r.Anomalies), e.Req, newest.Req)
			r.Anomalies = append(r.Anomalies, Anomaly{
				Kind: "stale-write-accepted",
				Message: fmt.Sprintf("%s wrote %s with token %d at %s (store seq %d) and the store accepted it, "+
					"although it had already accepted token %d from %s (store seq %d, %s)%s.",
					e.Client, stored(e), e.Token, history.Seconds(e.Time), e.Seq,
					newest.Token, newest.Client, newest.Seq, history.Seconds(newest.Time), overwrote(e)),
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
func tokenOrder(r *Result, h []history.Event, grants []grant) {
	// A history records events nearly in time order, often exactly, and a
	// sort leaves a sorted slice as it is, so each order starts from the
	// history's and sorts only if it must. Grants come in the order of
	// their invocations; a counting pass over the positions of their
	// grants puts them in that order too.
	at := make([]int32, len(h))
	for k, g := range grants {
		at[g.ret] = int32(k + 1)
	}
	byOK := make([]grant, 0, len(grants))
	for _, k := range at {
		if k > 0 {
			byOK = append(byOK, grants[k-1])
		}
	}
	// Equal times and indexes tie on the invocation order, so the order
	// does not depend on where the sort started.
	byOKOrder := func(a, b grant) int {
		return cmp.Or(cmp.Compare(a.ok, b.ok), cmp.Compare(a.okIdx, b.okIdx), cmp.Compare(a.call, b.call))
	}
	if !slices.IsSortedFunc(byOK, byOKOrder) {
		slices.SortFunc(byOK, byOKOrder)
	}
	byInvoke := grants
	byInvokeOrder := func(a, b grant) int {
		return cmp.Or(cmp.Compare(a.invoke, b.invoke), cmp.Compare(a.invokeIdx, b.invokeIdx))
	}
	if !slices.IsSortedFunc(byInvoke, byInvokeOrder) {
		slices.SortFunc(byInvoke, byInvokeOrder)
	}

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
		if highest == nil || highest.token <= b.token || !r.tally("token_order") {
			continue
		}
		r.Anomalies = append(r.Anomalies, Anomaly{
			Kind: "token-order",
			Message: fmt.Sprintf("%s was granted token %d at %s, lower than token %d that %s had been granted at %s, "+
				"before %s asked at %s.",
				b.client(h), b.token, history.Seconds(b.ok), highest.token, highest.client(h), history.Seconds(highest.ok),
				b.client(h), history.Seconds(b.invoke)),
			Events:  []int64{highest.okIdx, b.invokeIdx, b.okIdx},
			Clients: []string{b.client(h), highest.client(h)},
			Tokens:  []int64{b.token, highest.token},
			Time:    b.ok,
		})
	}

	// A token above every one granted before cannot repeat one, so the
	// tokens seen are indexed only from the first that does not rise,
	// which a correct lock never grants.
	var first map[int64]int // token -> its first grant in byOK
	var top int64
	for k, g := range byOK {
		if first == nil && (k == 0 || g.token > top) {
			top = g.token
			continue
		}
		if first == nil {
			first = make(map[int64]int, len(byOK))
			for i, f := range byOK[:k] {
				if _, ok := first[f.token]; !ok {
					first[f.token] = i
				}
			}
		}
		i, ok := first[g.token]
		if !ok {
			first[g.token] = k
			continue
		}
		if !r.tally("duplicate_token") {
			continue
		}
		f := byOK[i]
		r.Anomalies = append(r.Anomalies, Anomaly{
			Kind: "duplicate-token",
			Message: fmt.Sprintf("%s was granted token %d at %s, which %s had already been granted at %s.",
				g.client(h), g.token, history.Seconds(g.ok), f.client(h), history.Seconds(f.ok)),
			Events:  []int64{f.okIdx, g.okIdx},
			Clients: []string{g.client(h), f.client(h)},
			Tokens:  []int64{g.token},
			Time:    g.ok,
		})
	}
}

// stored names what a write stored: the counter's value or the set.
func stored(e *store.Entry) string {
	if e.Set != nil {
		return describeSet(e.Set)
	}
	return fmt.Sprint(e.Value)
}

// overwrote says what a counter write replaced; a set write's entry keeps
// no previous set.
func overwrote(e *store.Entry) string {
	if e.Set != nil {
		return ""
	}
	return fmt.Sprintf("; the write overwrote %d", e.Prev)
}
