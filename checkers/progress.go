package checkers

import (
	"fmt"
	"math"
	"strings"

	"github.com/lockbench/lockbench/history"
)

// Progress judges whether the workload did enough before the faults for the
// other verdicts to mean anything: a run whose clients never got going
// before the first fault passes every safety check without having tested
// the lock.
type Progress struct {
	// MinSections is how many critical sections must complete (write
	// acknowledged) before the first fault, or in the whole run without one.
	MinSections int64
}

// Name implements Checker.
func (Progress) Name() string { return "progress" }

// Check implements Checker.
func (c Progress) Check(in Input) Result {
	r := newResult(c.Name())
	firstFault := int64(math.MaxInt64)
	var skipped []string
	for _, e := range in.History {
		if e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Info && e.Time < firstFault {
			firstFault = e.Time
		}
		if e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Fail && strings.HasPrefix(e.Error, "skipped") {
			skipped = append(skipped, e.Fault+" "+e.Error)
		}
	}
	var before, total int64
	for _, e := range in.History {
		if e.F == history.Write && e.Type == history.OK && e.Process != history.Nemesis {
			total++
			if e.Time < firstFault {
				before++
			}
		}
	}
	r.Counts["sections"] = total
	r.Counts["sections_before_first_fault"] = before
	where := "in the whole run"
	if firstFault != math.MaxInt64 {
		where = "before the first fault at " + history.Seconds(firstFault)
	}
	r.Summary = fmt.Sprintf("%s completed %s, %d in all", plural(before, "critical section"), where, total)
	if firstFault == math.MaxInt64 {
		r.Summary = plural(total, "critical section") + " completed; no fault was injected"
	}
	// A fault that could not act on this service is no pass: if none of
	// the faults asked for could, the run tested nothing it was meant to.
	if len(skipped) > 0 && firstFault == math.MaxInt64 {
		r.Valid = Unknown
		r.Reason = "not meaningful: no fault asked for could be injected (" + strings.Join(skipped, "; ") + ")"
		return r
	}
	if before < c.MinSections {
		r.Valid = Unknown
		r.Reason = fmt.Sprintf("not meaningful: %s completed %s; at least %d are needed", plural(before, "critical section"), where, c.MinSections)
		return r
	}
	r.Valid = Valid
	return r
}
