package checkers

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// The kinds of anomaly this checker finds.
var (
	LostElement    = AnomalyKind{Name: "lost-element", About: "an acknowledged element is missing from the final set"}
	PhantomElement = AnomalyKind{Name: "phantom-element", About: "an element is in the final set that no client tried to add"}
)

// For returns the checkers of a workload ("counter" or "set"), in the
// order results are reported.
func For(workload string, linearTimeout time.Duration) []Checker {
	if workload == "set" {
		return []Checker{SetView{Linearizable{Timeout: linearTimeout}}, Fence{}, LostElements{}, Exclusion{}, progress()}
	}
	return All(linearTimeout)
}

// SetView runs a counter checker on a set history. A section of the set
// workload reads a set and writes that set plus one element, so naming each
// distinct set by a number (the empty set is 0) turns it into a section that
// reads one value and writes another, which the counter's model already
// judges: legal only from the state it read, and then in the state it wrote.
type SetView struct{ Inner Checker }

// Name implements Checker.
func (v SetView) Name() string { return v.Inner.Name() }

// Check implements Checker.
func (v SetView) Check(in Input) Result {
	// A set is named by its elements in order, eight bytes each; the
	// buffers are reused, and a key is copied only for a new set.
	ids := map[string]int64{"": 0}
	sets := [][]int64{nil} // by number, for messages
	var sorted []int64
	var key []byte
	id := func(set []int64) int64 {
		sorted = append(sorted[:0], set...)
		slices.Sort(sorted)
		key = key[:0]
		for _, x := range sorted {
			key = binary.LittleEndian.AppendUint64(key, uint64(x))
		}
		n, ok := ids[string(key)]
		if !ok {
			n = int64(len(ids))
			ids[string(key)] = n
			sets = append(sets, slices.Clone(sorted))
		}
		return n
	}
	// The write's completion carries no set: it takes its invocation's.
	pending := map[string]int64{}
	h := make([]history.Event, len(in.History))
	for i, e := range in.History {
		switch {
		case e.F == history.Read && e.Type == history.OK:
			e.Value = history.Int(id(e.Set))
		case e.F == history.Write && e.Type == history.Invoke:
			n := id(e.Set)
			pending[e.Process] = n
			e.Value = history.Int(n)
		case e.F == history.Write:
			e.Value = history.Int(pending[e.Process])
		}
		h[i] = e
	}
	log := make([]store.Entry, len(in.Store))
	for i, e := range in.Store {
		e.Value = id(e.Set)
		log[i] = e
	}
	// The view's records disagree where the set's do, and its ledger
	// would say so in set numbers: it takes the set's, which names sets.
	led := in.ledger(linearReader)
	in.History, in.Store = h, log
	in = in.withLedger(led)
	in.Name = func(n int64) string {
		if n < 0 || n >= int64(len(sets)) {
			return "an unknown set"
		}
		return describeSet(sets[n])
	}
	return v.Inner.Check(in)
}

// LostElements is the set workload's lost-update check: every element whose
// write was acknowledged must be in the final set, and nothing may be there
// that no client tried to add.
type LostElements struct{}

// Name implements Checker.
func (LostElements) Name() string { return "lost-elements" }

// adder is the write that tried to add an element.
type adder struct {
	client string
	token  int64
	event  int64 // the write's invocation
	typ    history.Type
}

// ValidateWorkload refuses a history that workload cannot have recorded,
// with an error wrapping history.ErrMalformed; a run is checked only
// after it. What any workload's history must be is history.Decode's.
func ValidateWorkload(workload string, h []history.Event) error {
	if workload == "set" {
		_, err := adds(h)
		return err
	}
	return nil
}

// adds is every element the set workload's writes tried to add, with the
// write. Each client numbers its own elements, so an element is added
// once: added twice, the second write would take the first's place, and a
// lost acknowledged add could hide behind a later one that timed out. Such
// a history is malformed.
func adds(h []history.Event) (map[int64]*adder, error) {
	added := map[int64]*adder{}
	pending := map[string]int64{} // process -> element of its open write
	for _, e := range h {
		if e.F != history.Write || e.Process == history.Nemesis {
			continue
		}
		if e.Type == history.Invoke {
			if e.Value != nil {
				if a, ok := added[*e.Value]; ok {
					return nil, fmt.Errorf("%w: element %d is added twice, by %s at event %d and by %s at event %d",
						history.ErrMalformed, *e.Value, a.client, a.event, e.Process, e.Index)
				}
				added[*e.Value] = &adder{client: e.Process, token: e.Token, event: e.Index, typ: history.Info}
				pending[e.Process] = *e.Value
			}
			continue
		}
		if el, ok := pending[e.Process]; ok {
			added[el].typ = e.Type
			delete(pending, e.Process)
		}
	}
	return added, nil
}

// Check implements Checker.
func (c LostElements) Check(in Input) Result {
	r := newResult(c.Name())
	if withoutStore(&r, in) {
		return r
	}
	added, err := adds(in.History)
	if err != nil {
		// A check refuses such a history before judging it
		// (ValidateWorkload); judged anyway, it proves nothing.
		r.Valid, r.Reason = Unknown, err.Error()
		r.Summary = "undecided: " + err.Error()
		return r
	}
	var accepted []store.Entry
	for _, e := range in.Store {
		if e.Op == "write" && e.Outcome == store.Accepted && (in.Key == "" || e.Key == in.Key) {
			accepted = append(accepted, e)
		}
	}
	final := map[int64]bool{}
	if len(accepted) > 0 {
		for _, x := range accepted[len(accepted)-1].Set {
			final[x] = true
		}
	}
	var acked, unknown, unknownPresent int64
	var lost []int64
	for el, a := range added {
		switch a.typ {
		case history.OK:
			acked++
			if !final[el] {
				lost = append(lost, el)
			}
		case history.Info:
			unknown++
			if final[el] {
				unknownPresent++
			}
		}
	}
	r.Counts["acknowledged"], r.Counts["unknown"], r.Counts["unknown_present"] = acked, unknown, unknownPresent
	r.Counts["final"] = int64(len(final))
	r.Summary = fmt.Sprintf("%d elements in the final set; %s acknowledged, %d unknown (%d present)",
		len(final), plural(acked, "add"), unknown, unknownPresent)
	// The same cross-check as the counter's: a run whose two records
	// disagree is not judged.
	if in.ledger(dataReader).unknown(&r) {
		return r
	}
	sort.Slice(lost, func(i, j int) bool { return added[lost[i]].event < added[lost[j]].event })
	erasers := erasedBy(accepted)
	for _, el := range lost {
		a := added[el]
		an := Anomaly{Kind: LostElement.Name, Events: []int64{a.event}, Clients: []string{a.client}, Tokens: []int64{a.token}}
		an.Message = fmt.Sprintf("%s added %d (token %d, event %d) and the store acknowledged it, but it is not in the final set", a.client, el, a.token, a.event)
		if w, ok := erasers[el]; ok {
			an.Message += fmt.Sprintf(": %s's write with token %d at %s (store seq %d) wrote a set without it", w.Client, w.Token, history.Seconds(w.Time), w.Seq)
			an.StoreSeqs = []int64{w.Seq}
			an.Clients = append(an.Clients, w.Client)
			an.Tokens = append(an.Tokens, w.Token)
			an.Time = w.Time
		}
		r.add("lost", an)
	}
	var phantoms []int64
	for x := range final {
		if _, ok := added[x]; !ok {
			phantoms = append(phantoms, x)
		}
	}
	slices.Sort(phantoms)
	for _, x := range phantoms {
		r.add("phantom", Anomaly{Kind: PhantomElement.Name, Message: fmt.Sprintf("%d is in the final set but no client tried to add it", x)})
	}
	r.Valid = Valid
	if len(r.Anomalies) > 0 {
		r.Valid = Invalid
	}
	r.Summary += fmt.Sprintf("; %s lost", plural(int64(len(lost)), "element"))
	return r
}

// erasedBy finds, for each element that left the set, the first accepted
// write that stored a set without it.
func erasedBy(accepted []store.Entry) map[int64]store.Entry {
	out := map[int64]store.Entry{}
	holder := map[int64]int{} // element -> 1 + the last write whose set holds it
	var present []int64
	for k, w := range accepted {
		for _, x := range w.Set {
			holder[x] = k + 1
		}
		for _, x := range present {
			if holder[x] != k+1 {
				if _, seen := out[x]; !seen {
					out[x] = w
				}
			}
		}
		present = w.Set
	}
	return out
}
