package history

// Op is an invocation paired with its completion on one process, or a lone
// event (lease-lost) that stands for itself.
type Op struct {
	Process string
	F       string
	Call    Event
	// Ret is the completion; for a lone event it is the event itself, and
	// for an invocation that never completed it is the invocation.
	Ret Event
	// Type is ok, fail or info; an invocation that never completed is info.
	Type Type
	Lone bool
	// Done is false for an invocation the run stopped before completing.
	Done bool
}

// Pair matches each completion to its invocation: a process has at most
// one operation outstanding at a time. Nemesis events are left out.
func Pair(h []Event) []Op {
	ops := make([]Op, 0, len(h)/2+1)
	pending := map[string]int{}
	for _, e := range h {
		if e.Process == Nemesis {
			continue
		}
		if e.Type == Invoke {
			// An invocation still pending at the end never completed; it stays info.
			ops = append(ops, Op{Process: e.Process, F: e.F, Call: e, Ret: e, Type: Info})
			pending[e.Process] = len(ops) - 1
			continue
		}
		if i, ok := pending[e.Process]; ok && ops[i].F == e.F {
			ops[i].Ret, ops[i].Type, ops[i].Done = e, e.Type, true
			delete(pending, e.Process)
			continue
		}
		ops = append(ops, Op{Process: e.Process, F: e.F, Call: e, Ret: e, Type: e.Type, Lone: true, Done: true})
	}
	return ops
}
