package checkers

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockbench/lockbench/history"
)

// The kinds of anomaly this checker finds.
var (
	NonLinearizable = AnomalyKind{Name: "non-linearizable", About: "no order of the critical sections fits the counter (or the set)", Story: StoryWhole}
)

// Outcome is what became of a critical section's write.
type Outcome string

const (
	WriteAccepted Outcome = "accepted" // write ok: the store applied it
	WriteRejected Outcome = "rejected" // write fail: it certainly had no effect
	WriteUnknown  Outcome = "unknown"  // write info, or never completed
	NoWrite       Outcome = "none"     // lease lost, or the run ended first
)

// Section is one critical section of the counter workload: a successful read
// and the write (if any) that the client based on it. Under a correct lock
// sections never overlap in effect, so the counter behaves as if they ran
// one at a time; that is what the linearizability check asks.
type Section struct {
	Client string `json:"client"`
	// ClientID is the zero-based client number (c3 -> 2), as porcupine's
	// visualization wants.
	ClientID int   `json:"client_id"`
	Token    int64 `json:"token"`
	Read     int64 `json:"read"`
	// Write is the value the write tried to store; meaningless when Outcome
	// is NoWrite.
	Write   int64   `json:"write"`
	Outcome Outcome `json:"outcome"`
	// Call is when the read was invoked; Return is when the write completed,
	// the read completed if there was no write, or the end of the history if
	// the write's outcome is unknown, since it may land at any later time.
	Call   int64   `json:"call"`
	Return int64   `json:"return"`
	Events []int64 `json:"events"`
}

// Sections extracts the critical sections on key ("" for any) from a
// history, in the order their reads were invoked. A read that failed or
// timed out had no effect on the counter and starts no section.
func Sections(h []history.Event, key string) []Section {
	return sectionsOf(Input{History: h, Key: key})
}

// sectionsOf is Sections of in's history and key, from in's operations.
func sectionsOf(in Input) []Section {
	h, key := in.History, in.Key
	end := endOfHistory(h)
	ops, procs := in.Refs()
	out := make([]Section, 0, calls(h, ops, history.Read))
	// The sections' events share one array, room for a read and a write
	// each: one allocation rather than one per section.
	events := make([]int64, 0, 4*cap(out))
	open := make([]int, procs) // per process, the index in out of its open section, or -1
	for p := range open {
		open[p] = -1
	}
	closeOpen := func(p int32) {
		if i := open[p]; i >= 0 {
			out[i].Outcome = NoWrite
			open[p] = -1
		}
	}
	for _, o := range ops {
		call, ret := &h[o.Call], &h[o.Ret]
		if !onKey(call, key) {
			continue
		}
		switch {
		case call.F == history.Read && !o.Lone():
			closeOpen(o.Proc)
			if o.Type(h) != history.OK || ret.Value == nil {
				continue
			}
			out = append(out, Section{
				Client: call.Process,
				Token:  call.Token,
				Read:   *ret.Value,
				Call:   call.Time,
				Return: ret.Time,
				Events: append(events[len(events):len(events):len(events)+4], call.Index, ret.Index),
			})
			events = events[:len(events)+4]
			open[o.Proc] = len(out) - 1
		case call.F == history.Write && !o.Lone():
			i := open[o.Proc]
			if i < 0 {
				continue
			}
			open[o.Proc] = -1
			s := &out[i]
			s.Write = s.Read + 1
			if call.Value != nil {
				s.Write = *call.Value
			}
			s.Events = append(s.Events, call.Index)
			if o.Done {
				s.Events = append(s.Events, ret.Index)
			}
			switch o.Type(h) {
			case history.OK:
				s.Outcome, s.Return = WriteAccepted, ret.Time
			case history.Fail:
				s.Outcome, s.Return = WriteRejected, ret.Time
			default:
				s.Outcome, s.Return = WriteUnknown, end
			}
		default:
			if i := open[o.Proc]; i >= 0 && call.F == history.LeaseLost {
				// The client learns of the loss concurrently with its own
				// steps: if it had already passed its lease check, its
				// write still follows and belongs to this section.
				out[i].Events = append(out[i].Events, call.Index)
				continue
			}
			closeOpen(o.Proc)
		}
	}
	// The run ended before these sections wrote.
	for p := range open {
		closeOpen(int32(p))
	}
	assignClientIDs(out)
	return out
}

// assignClientIDs numbers clients by their names (c3 -> 2) so the
// visualization's rows match the process names; a name without a number
// gets the next free row.
func assignClientIDs(ss []Section) {
	next := 0
	for _, s := range ss {
		if n, ok := history.ClientNumber(s.Client); ok {
			next = max(next, n)
		}
	}
	extra := map[string]int{}
	for i := range ss {
		if n, ok := history.ClientNumber(ss[i].Client); ok {
			ss[i].ClientID = n - 1
			continue
		}
		id, ok := extra[ss[i].Client]
		if !ok {
			id = next
			extra[ss[i].Client] = id
			next++
		}
		ss[i].ClientID = id
	}
}

// Operations turns sections into porcupine operations; the input of each is
// its Section, and the ids porcupine reports index into ss.
func Operations(ss []Section) []porcupine.Operation {
	ops := make([]porcupine.Operation, len(ss))
	for i, s := range ss {
		ops[i] = porcupine.Operation{ClientId: s.ClientID, Input: s, Call: s.Call, Return: s.Return}
	}
	return ops
}

// CounterModel is the sequential specification of the counter under a lock:
// each section reads the current value and, if its write took effect,
// stores the value it computed. An unknown write may or may not have taken
// effect, hence the nondeterminism.
func CounterModel() porcupine.Model { return counterModel([]int64{0}, nil) }

// counterModel is CounterModel starting from any of the values init; once
// guard's budget runs out it admits no step, which ends the search.
func counterModel(init []int64, guard *memoryGuard) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} {
			states := make([]interface{}, len(init))
			for i, v := range init {
				states[i] = v
			}
			return states
		},
		Step: func(state, input, _ interface{}) []interface{} {
			if guard.exceeded() {
				return nil
			}
			v, s := state.(int64), input.(Section)
			next, n := successors(v, &s)
			out := make([]interface{}, n)
			for i := range n {
				out[i] = next[i]
			}
			return out
		},
		Hash:              func(state interface{}) uint64 { return uint64(state.(int64)) },
		DescribeOperation: func(input, _ interface{}) string { return describeSection(input.(Section)) },
		DescribeState:     func(state interface{}) string { return strconv.FormatInt(state.(int64), 10) },
	}
	return nm.ToModel()
}

// successors are the values the counter may hold after s from v: none if
// s did not read v.
func successors(v int64, s *Section) ([2]int64, int) {
	if v != s.Read {
		return [2]int64{}, 0
	}
	switch s.Outcome {
	case WriteAccepted:
		return [2]int64{s.Write}, 1
	case WriteUnknown:
		if s.Write == v {
			return [2]int64{v}, 1
		}
		return [2]int64{v, s.Write}, 2
	default:
		return [2]int64{v}, 1
	}
}

func describeSection(s Section) string {
	switch s.Outcome {
	case WriteAccepted:
		return fmt.Sprintf("%s t%d: read %d, wrote %d", s.Client, s.Token, s.Read, s.Write)
	case WriteRejected:
		return fmt.Sprintf("%s t%d: read %d, write %d rejected", s.Client, s.Token, s.Read, s.Write)
	case WriteUnknown:
		return fmt.Sprintf("%s t%d: read %d, write %d unknown", s.Client, s.Token, s.Read, s.Write)
	default:
		return fmt.Sprintf("%s t%d: read %d, no write", s.Client, s.Token, s.Read)
	}
}

// Linearizable checks that the critical sections, as the clients saw them,
// could have run one at a time: the lock's whole promise. It judges the
// values the history says were written; where the store log says a write
// stored another, the history is wrong about itself and the verdict is
// unknown (the data checkers, which judge the log's, are unknown with it).
type Linearizable struct {
	// Timeout bounds porcupine's search, which is exponential in the worst
	// case; 0 means no bound.
	Timeout time.Duration
	// MemoryBudget bounds how much the search may grow the heap, in bytes;
	// zero means DefaultMemoryBudget.
	MemoryBudget uint64
}

func (Linearizable) Name() string { return "linearizable" }

func (c Linearizable) Check(in Input) Result {
	r := newResult(c.Name())
	ss := in.Sections()
	r.Counts["sections"] = int64(len(ss))
	zero(r.Counts, string(WriteAccepted), string(WriteRejected), string(WriteUnknown), string(NoWrite), "non_linearizable")
	for i := range ss {
		r.Counts[string(ss[i].Outcome)]++
	}
	if disagreeing(&r, in.ledger(linearReader).written) {
		r.Summary = fmt.Sprintf("undecided: the history and the store log disagree on what a write wrote (%s)", plural(int64(len(ss)), "critical section"))
		return r
	}
	budget := c.MemoryBudget
	if budget == 0 {
		budget = DefaultMemoryBudget
	}
	guard := guardMemory(budget)
	res, a := checkSections(ss, c.Timeout, guard, in.Name)
	guard.release()
	switch res {
	case porcupine.Ok:
		r.Valid = Valid
		r.Summary = plural(int64(len(ss)), "critical section") + " linearizable"
	case porcupine.Illegal:
		r.Valid = Invalid
		r.add("non_linearizable", a)
		r.Summary = fmt.Sprintf("not linearizable: no order fits all %s", plural(int64(len(ss)), "critical section"))
	case porcupine.Unknown:
		if guard.exceeded() {
			r.Valid = Unknown
			r.Reason = fmt.Sprintf("linearizability check ran past its memory budget of %d MiB", budget>>20)
			r.Summary = fmt.Sprintf("undecided: the search over %s ran out of memory budget", plural(int64(len(ss)), "critical section"))
			return r
		}
		fallthrough
	default:
		r.Valid = Unknown
		r.Reason = fmt.Sprintf("linearizability check timed out after %s", c.Timeout)
		r.Summary = fmt.Sprintf("undecided: the search over %s timed out", plural(int64(len(ss)), "critical section"))
	}
	return r
}

// explainIllegal reports where the search got stuck: the longest order of
// sections the model accepts, the counter after it, and the sections that
// had to come next but could not. placed marks the sections of that order,
// last is its last section (-1 if it is empty) and state the values the
// counter may hold after it; ret is each section's return time as the
// search saw it.
func explainIllegal(ss []Section, ret []int64, placed []bool, last int, state []int64, name valueNamer) Anomaly {
	nPlaced := 0
	for _, p := range placed {
		if p {
			nPlaced++
		}
	}
	// The next section must be one invoked before the earliest return among
	// those not yet placed; every such section failed to fit.
	firstReturn := int64(math.MaxInt64)
	for i := range ss {
		if !placed[i] {
			firstReturn = min(firstReturn, ret[i])
		}
	}
	var stuck []int
	for i, s := range ss {
		if !placed[i] && s.Call <= firstReturn {
			stuck = append(stuck, i)
		}
	}

	a := Anomaly{Kind: NonLinearizable.Name, Time: firstReturn}
	note := func(s Section) {
		a.Events = append(a.Events, s.Events...)
		if !slices.Contains(a.Clients, s.Client) {
			a.Clients = append(a.Clients, s.Client)
		}
		if !slices.Contains(a.Tokens, s.Token) {
			a.Tokens = append(a.Tokens, s.Token)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "No order of the critical sections fits the counter; the longest that does places %d of %d. ", nPlaced, len(ss))
	if last < 0 {
		b.WriteString("The counter starts at 0")
	} else {
		note(ss[last])
		fmt.Fprintf(&b, "After %s, the counter is %s", sectionStory(ss[last], name), counterValues(state, name))
	}
	b.WriteString(", and no section that could come next fits: ")
	for k, id := range stuck {
		if k > 0 {
			b.WriteString("; ")
		}
		note(ss[id])
		b.WriteString(sectionStory(ss[id], name))
	}
	b.WriteString(".")
	a.Message = b.String()
	slices.Sort(a.Events)
	return a
}

func sectionStory(s Section, name valueNamer) string {
	who := fmt.Sprintf("%s (token %d) read %s", s.Client, s.Token, name.of(s.Read))
	span := fmt.Sprintf("%s to %s", history.Seconds(s.Call), history.Seconds(s.Return))
	switch s.Outcome {
	case WriteAccepted:
		return fmt.Sprintf("%s and wrote %s (accepted; %s)", who, name.of(s.Write), span)
	case WriteRejected:
		return fmt.Sprintf("%s and tried to write %s (rejected; %s)", who, name.of(s.Write), span)
	case WriteUnknown:
		return fmt.Sprintf("%s and wrote %s (outcome unknown; from %s)", who, name.of(s.Write), history.Seconds(s.Call))
	default:
		return fmt.Sprintf("%s and wrote nothing (%s)", who, span)
	}
}

// counterValues formats the values the counter may hold.
func counterValues(vs []int64, name valueNamer) string {
	vs = slices.Sorted(slices.Values(vs))
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = name.of(v)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "one of " + strings.Join(parts, ", ")
}
