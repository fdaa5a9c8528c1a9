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
	end := endOfHistory(h)
	var out []Section
	open := map[string]int{} // process -> index in out of its open section
	closeOpen := func(p string) {
		if i, ok := open[p]; ok {
			out[i].Outcome = NoWrite
			delete(open, p)
		}
	}
	for _, o := range history.Pair(h) {
		if !onKey(o, key) {
			continue
		}
		switch {
		case o.F == history.Read && !o.Lone:
			closeOpen(o.Process)
			if o.Type != history.OK || o.Ret.Value == nil {
				continue
			}
			out = append(out, Section{
				Client: o.Process,
				Token:  o.Call.Token,
				Read:   *o.Ret.Value,
				Call:   o.Call.Time,
				Return: o.Ret.Time,
				Events: []int64{o.Call.Index, o.Ret.Index},
			})
			open[o.Process] = len(out) - 1
		case o.F == history.Write && !o.Lone:
			i, ok := open[o.Process]
			if !ok {
				continue
			}
			delete(open, o.Process)
			s := &out[i]
			s.Write = s.Read + 1
			if o.Call.Value != nil {
				s.Write = *o.Call.Value
			}
			s.Events = append(s.Events, o.Call.Index)
			if o.Done {
				s.Events = append(s.Events, o.Ret.Index)
			}
			switch o.Type {
			case history.OK:
				s.Outcome, s.Return = WriteAccepted, o.Ret.Time
			case history.Fail:
				s.Outcome, s.Return = WriteRejected, o.Ret.Time
			default:
				s.Outcome, s.Return = WriteUnknown, end
			}
		default:
			if i, ok := open[o.Process]; ok && o.F == history.LeaseLost {
				// The client learns of the loss concurrently with its own
				// steps: if it had already passed its lease check, its
				// write still follows and belongs to this section.
				out[i].Events = append(out[i].Events, o.Call.Index)
				continue
			}
			closeOpen(o.Process)
		}
	}
	// The run ended before these sections wrote.
	for _, i := range open {
		out[i].Outcome = NoWrite
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
		if n, ok := clientNumber(s.Client); ok {
			next = max(next, n)
		}
	}
	extra := map[string]int{}
	for i := range ss {
		if n, ok := clientNumber(ss[i].Client); ok {
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

func clientNumber(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "c")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 1
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
func CounterModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{int64(0)} },
		Step: func(state, input, _ interface{}) []interface{} {
			v, s := state.(int64), input.(Section)
			if v != s.Read {
				return nil
			}
			switch s.Outcome {
			case WriteAccepted:
				return []interface{}{s.Write}
			case WriteUnknown:
				return []interface{}{v, s.Write}
			default:
				return []interface{}{v}
			}
		},
		Hash:              func(state interface{}) uint64 { return uint64(state.(int64)) },
		DescribeOperation: func(input, _ interface{}) string { return describeSection(input.(Section)) },
		DescribeState:     func(state interface{}) string { return strconv.FormatInt(state.(int64), 10) },
	}
	return nm.ToModel()
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
// could have run one at a time: the lock's whole promise.
type Linearizable struct {
	// Timeout bounds porcupine's search, which is exponential in the worst
	// case; 0 means no bound.
	Timeout time.Duration
}

func (Linearizable) Name() string { return "linearizable" }

func (c Linearizable) Check(in Input) Result {
	r := newResult(c.Name())
	ss := Sections(in.History, in.Key)
	r.Counts["sections"] = int64(len(ss))
	zero(r.Counts, string(WriteAccepted), string(WriteRejected), string(WriteUnknown), string(NoWrite), "non_linearizable")
	for _, s := range ss {
		r.Counts[string(s.Outcome)]++
	}
	model := CounterModel()
	res, info := porcupine.CheckOperationsVerbose(model, Operations(ss), c.Timeout)
	switch res {
	case porcupine.Ok:
		r.Valid = Valid
		r.Summary = plural(int64(len(ss)), "critical section") + " linearizable"
	case porcupine.Illegal:
		r.Valid = Invalid
		a := explainIllegal(ss, info, model)
		r.add("non_linearizable", a)
		r.Summary = fmt.Sprintf("not linearizable: no order fits all %s", plural(int64(len(ss)), "critical section"))
	default:
		r.Valid = Unknown
		r.Reason = fmt.Sprintf("linearizability check timed out after %s", c.Timeout)
		r.Summary = fmt.Sprintf("undecided: the search over %s timed out", plural(int64(len(ss)), "critical section"))
	}
	return r
}

// explainIllegal reports where the search got stuck: the longest order of
// sections the model accepts, the counter after it, and the sections that
// had to come next but could not.
func explainIllegal(ss []Section, info porcupine.LinearizationInfo, model porcupine.Model) Anomaly {
	var longest []int
	if parts := info.PartialLinearizations(); len(parts) > 0 {
		for _, p := range parts[0] {
			// Ties break on the ids so the report does not depend on map order.
			if len(p) > len(longest) || (len(p) == len(longest) && slices.Compare(p, longest) < 0) {
				longest = p
			}
		}
	}
	placed := make([]bool, len(ss))
	state := model.Init()
	for _, id := range longest {
		placed[id] = true
		_, state = model.Step(state, ss[id], nil)
	}
	// The next section must be one invoked before the earliest return among
	// those not yet placed; every such section failed to fit.
	firstReturn := int64(math.MaxInt64)
	for i, s := range ss {
		if !placed[i] {
			firstReturn = min(firstReturn, s.Return)
		}
	}
	var stuck []int
	for i, s := range ss {
		if !placed[i] && s.Call <= firstReturn {
			stuck = append(stuck, i)
		}
	}

	a := Anomaly{Kind: "non-linearizable", Time: firstReturn}
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
	fmt.Fprintf(&b, "No order of the critical sections fits the counter; the longest that does places %d of %d. ", len(longest), len(ss))
	if len(longest) == 0 {
		b.WriteString("The counter starts at 0")
	} else {
		last := ss[longest[len(longest)-1]]
		note(last)
		fmt.Fprintf(&b, "After %s, the counter is %s", sectionStory(last), counterValues(state))
	}
	b.WriteString(", and no section that could come next fits: ")
	for k, id := range stuck {
		if k > 0 {
			b.WriteString("; ")
		}
		note(ss[id])
		b.WriteString(sectionStory(ss[id]))
	}
	b.WriteString(".")
	a.Message = b.String()
	slices.Sort(a.Events)
	return a
}

func sectionStory(s Section) string {
	who := fmt.Sprintf("%s (token %d) read %d", s.Client, s.Token, s.Read)
	span := fmt.Sprintf("%s to %s", history.Seconds(s.Call), history.Seconds(s.Return))
	switch s.Outcome {
	case WriteAccepted:
		return fmt.Sprintf("%s and wrote %d (accepted; %s)", who, s.Write, span)
	case WriteRejected:
		return fmt.Sprintf("%s and tried to write %d (rejected; %s)", who, s.Write, span)
	case WriteUnknown:
		return fmt.Sprintf("%s and wrote %d (outcome unknown; from %s)", who, s.Write, history.Seconds(s.Call))
	default:
		return fmt.Sprintf("%s and wrote nothing (%s)", who, span)
	}
}

// counterValues formats a state of CounterModel, which is the set of values
// the counter may hold.
func counterValues(state interface{}) string {
	var vs []int64
	for _, v := range state.([]interface{}) {
		vs = append(vs, v.(int64))
	}
	slices.Sort(vs)
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatInt(v, 10)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "one of " + strings.Join(parts, ", ")
}
