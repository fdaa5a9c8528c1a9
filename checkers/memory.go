package checkers

import (
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// DefaultMemoryBudget bounds the heap the linearizability search may grow
// by when Linearizable.MemoryBudget is zero.
const DefaultMemoryBudget = 4 << 30

// memoryGuard watches the heap while a search runs. Porcupine takes no
// context, so past the budget the search is starved instead (its steps find
// no next state, and it ends at once) and its answer thrown away: the
// verdict is unknown, never a guess and never a crash.
type memoryGuard struct {
	over atomic.Bool
	stop chan struct{}
	done chan struct{}
}

const heapMetric = "/memory/classes/heap/objects:bytes"

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// guardMemory starts watching for growth past budget bytes.
func guardMemory(budget uint64) *memoryGuard {
	g := &memoryGuard{stop: make(chan struct{}), done: make(chan struct{})}
	base := heapBytes()
	go func() {
		defer close(g.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-g.stop:
				return
			case <-tick.C:
			}
			if h := heapBytes(); h > base && h-base > budget {
				g.over.Store(true)
				return
			}
		}
	}()
	return g
}

// exceeded reports whether the budget ran out; a nil guard never does.
func (g *memoryGuard) exceeded() bool { return g != nil && g.over.Load() }

// release stops the watch.
func (g *memoryGuard) release() {
	close(g.stop)
	<-g.done
}
