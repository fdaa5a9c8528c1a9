package history

import (
	"iter"
	"slices"
)

// Op is an invocation paired with its completion on one process, or a lone
// event (lease-lost) that stands for itself.
type Op struct {
	Process string
	F       string
	// Call and Ret point into the history Pair was given, which must not
	// change while they are in use: a million-event run's operations
	// would otherwise copy every event.
	Call *Event
	// Ret is the completion; for a lone event it is the event itself, and
	// for an invocation that never completed it is the invocation.
	Ret *Event
	// Type is ok, fail or info; an invocation that never completed is info.
	Type Type
	Lone bool
	// Done is false for an invocation the run stopped before completing.
	Done bool
}

// Ref is an operation by position in its history: Call and Ret index the
// events (equal for a lone event and for an invocation that never
// completed), Proc numbers the process from 0 in order of appearance. The
// checkers walk every operation of runs of a million events; a Ref copies
// no event.
type Ref struct {
	Call, Ret, Proc int32
	Done            bool
}

// Lone reports whether the operation is a lone event.
func (r Ref) Lone() bool { return r.Done && r.Call == r.Ret }

// Type is ok, fail or info; an invocation that never completed is info.
func (r Ref) Type(h []Event) Type {
	if !r.Done {
		return Info
	}
	return h[r.Ret].Type
}

// Op is the operation r (a Ref of h) points to, with its events.
func (r Ref) Op(h []Event) Op {
	call := &h[r.Call]
	return Op{Process: call.Process, F: call.F, Call: call, Ret: &h[r.Ret], Type: r.Type(h), Lone: r.Lone(), Done: r.Done}
}

// Refs matches each completion to its invocation, by position: a process
// has at most one operation outstanding at a time. Nemesis events are left
// out. It also returns how many processes the operations have.
func Refs(h []Event) ([]Ref, int) {
	refs := make([]Ref, 0, len(h)/2+1)
	procs := map[string]int32{}
	var pending []int // per process, the index in refs of its open invocation, or -1
	for i := range h {
		e := &h[i]
		if e.Process == Nemesis {
			continue
		}
		p, ok := procs[e.Process]
		if !ok {
			p = int32(len(pending))
			procs[e.Process] = p
			pending = append(pending, -1)
		}
		if e.Type == Invoke {
			refs = append(refs, Ref{Call: int32(i), Ret: int32(i), Proc: p})
			pending[p] = len(refs) - 1
			continue
		}
		if j := pending[p]; j >= 0 && h[refs[j].Call].F == e.F {
			refs[j].Ret, refs[j].Done = int32(i), true
			pending[p] = -1
			continue
		}
		refs = append(refs, Ref{Call: int32(i), Ret: int32(i), Proc: p, Done: true})
	}
	return refs, len(pending)
}

// Pair is Refs with the events themselves, for readers that want them.
func Pair(h []Event) []Op {
	refs, _ := Refs(h)
	return slices.AppendSeq(make([]Op, 0, len(refs)), Ops(h, refs))
}

// Ops yields the operations refs (Refs of h) point to, with their events,
// one at a time: a million-event run's operations, held at once, would be
// tens of megabytes that their readers only walk.
func Ops(h []Event, refs []Ref) iter.Seq[Op] {
	return func(yield func(Op) bool) {
		for _, r := range refs {
			if !yield(r.Op(h)) {
				return
			}
		}
	}
}
