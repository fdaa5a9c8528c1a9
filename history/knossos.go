package history

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// WriteKnossos writes a counter run's reads and writes of key as a Jepsen
// history for Knossos's register model, one operation map a line, as
// Jepsen's history.edn: {:type :invoke, :f :read, :value nil, :process 3,
// :time 1200, :index 7}. The counter is a register its clients read and
// then write: a write's value is its read plus one, which the register
// model need not know. Lock operations and the nemesis's are left out (a
// register has no such operations); indexes stay those of history.jsonl,
// so every operation can be traced back to it. It returns how many
// operations it wrote.
func WriteKnossos(out io.Writer, events []Event, key string) (int, error) {
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, ";; lockbench counter history for knossos.model/register: reads and writes of %q; lock and nemesis operations left out\n", key)
	n := 0
	for _, e := range events {
		if e.Process == Nemesis || e.Key != key || (e.F != Read && e.F != Write) {
			continue
		}
		p, ok := ClientNumber(e.Process)
		if !ok {
			return n, fmt.Errorf("event %d: process %q is not a client", e.Index, e.Process)
		}
		if e.Set != nil {
			return n, fmt.Errorf("event %d holds a set: the register model fits the counter workload only", e.Index)
		}
		value := "nil"
		if e.Value != nil && (e.F == Write || e.Type == OK) {
			value = strconv.FormatInt(*e.Value, 10)
		}
		fmt.Fprintf(w, "{:type :%s, :f :%s, :value %s, :process %d, :time %d, :index %d}\n", e.Type, e.F, value, p, e.Time, e.Index)
		n++
	}
	if err := w.Flush(); err != nil {
		return n, fmt.Errorf("write knossos history: %w", err)
	}
	return n, nil
}
