package matrix

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/workloads"
)

// The sweep axes as a cell holds them; each unset field is its flag's
// default, which is how a cell built without them (a test's, or a run's
// asked about by ForRun) names and matches.

func (c Cell) ttl() time.Duration {
	if c.TTL == 0 {
		return config.DefaultTTL
	}
	return c.TTL.D()
}

func (c Cell) concurrency() int {
	if c.Concurrency == 0 {
		return config.DefaultConcurrency
	}
	return c.Concurrency
}

// rtt is the cell's steady round trip; Grid and ForRun write it with
// time.Duration's String, so it parses.
func (c Cell) rtt() time.Duration {
	d, _ := time.ParseDuration(c.RTT)
	return d
}

func (c Cell) variant() string {
	if c.Variant == "" {
		return config.Correct
	}
	return c.Variant
}

func (c Cell) onLockError() string {
	if c.OnLockError == "" {
		return config.FailClosed
	}
	return c.OnLockError
}

// The values of Cell.CheckLease and --check-leases: --check-lease given
// or not.
const (
	CheckLeaseOn  = "on"
	CheckLeaseOff = "off"
)

// CheckLeases are the values --check-leases takes.
var CheckLeases = []string{CheckLeaseOn, CheckLeaseOff}

// OnOff is how a cell writes a --check-lease.
func OnOff(checkLease bool) string {
	if checkLease {
		return CheckLeaseOn
	}
	return CheckLeaseOff
}

func (c Cell) checkLease() bool { return c.CheckLease == CheckLeaseOn }

func (c Cell) work() string {
	if c.Work == "" {
		return config.DefaultWork
	}
	return c.Work
}

// sameWork reports whether two work distributions are the same (fixed:1s
// and fixed:1000ms are); one that does not parse is the same as nothing.
func sameWork(a, b string) bool {
	wa, errA := workloads.ParseWork(a)
	wb, errB := workloads.ParseWork(b)
	return errA == nil && errB == nil && wa == wb
}

// axisNames are the parts of the cell's name for the sweep axes whose
// value is not their flag's default, in a fixed order: ttl-500ms,
// clients-20, rtt-20ms, variant-NAME, fail-open, check-lease-on,
// work-DIST. Durations are time.Duration's canonical form, so a TTL reads
// the same however it was written; the work distribution comes last, as
// written, because its syntax (tail:MIN-MAX,1/N,LONG) may hold a slash.
func (c Cell) axisNames() []string {
	var out []string
	if c.ttl() != config.DefaultTTL {
		out = append(out, "ttl-"+c.ttl().String())
	}
	if c.concurrency() != config.DefaultConcurrency {
		out = append(out, "clients-"+strconv.Itoa(c.concurrency()))
	}
	if c.rtt() != 0 {
		out = append(out, "rtt-"+c.rtt().String())
	}
	if c.variant() != config.Correct {
		out = append(out, "variant-"+c.variant())
	}
	if c.onLockError() != config.FailClosed {
		out = append(out, "fail-"+c.onLockError())
	}
	if c.checkLease() {
		out = append(out, "check-lease-on")
	}
	if !sameWork(c.work(), config.DefaultWork) {
		out = append(out, "work-"+c.work())
	}
	return out
}

// applyAxes sets the cell's sweep axes on a run's configuration; an unset
// one keeps the base's value.
func (c Cell) applyAxes(cfg *config.Config) {
	if c.TTL != 0 {
		cfg.TTL = c.TTL
	}
	if c.Concurrency != 0 {
		cfg.Concurrency = c.Concurrency
	}
	if c.RTT != "" {
		cfg.RTT = config.Duration(c.rtt())
	}
	if c.Variant != "" {
		cfg.Variant = c.Variant
	}
	if c.OnLockError != "" {
		cfg.OnLockError = c.OnLockError
	}
	if c.CheckLease != "" {
		cfg.CheckLease = c.checkLease()
	}
	if c.Work != "" {
		cfg.Work = c.Work
	}
}

// sweep is the cell at every combination of the sweep axes, each empty
// axis the base's value alone, in the order of axisNames.
func (a Axes) sweep(c Cell, base config.Config) []Cell {
	ttls := or(a.TTLs, base.TTL.D())
	concurrencies := or(a.Concurrencies, base.Concurrency)
	rtts := or(a.RTTs, base.RTT.D())
	variants := or(a.Variants, base.Variant)
	lockErrors := or(a.OnLockErrors, base.OnLockError)
	leases := or(a.CheckLeases, OnOff(base.CheckLease))
	works := or(a.Works, base.Work)
	var out []Cell
	for _, ttl := range ttls {
		for _, n := range concurrencies {
			for _, rtt := range rtts {
				for _, v := range variants {
					for _, le := range lockErrors {
						for _, cl := range leases {
							for _, w := range works {
								x := c
								x.TTL, x.Concurrency, x.RTT = config.Duration(ttl), n, rtt.String()
								x.Variant, x.OnLockError, x.CheckLease, x.Work = v, le, cl, w
								if !a.FixedFaultDuration && ttl != base.TTL.D() {
									x.FaultDuration = config.Duration(2 * ttl)
								}
								out = append(out, x)
							}
						}
					}
				}
			}
		}
	}
	return out
}

func or[T any](values []T, base T) []T {
	if len(values) == 0 {
		return []T{base}
	}
	return values
}

// matchesAxes reports whether the rule's sweep keys (each unset one
// matching anything) match the cell's axes; durations and work
// distributions compare by value, not by how they were written.
func (r Rule) matchesAxes(c Cell) bool {
	sameDuration := func(want string, got time.Duration) bool {
		d, err := time.ParseDuration(want)
		return want == "" || (err == nil && d == got)
	}
	return sameDuration(r.TTL, c.ttl()) && (r.Concurrency == 0 || r.Concurrency == c.concurrency()) &&
		sameDuration(r.RTT, c.rtt()) && (r.Variant == "" || r.Variant == c.variant()) &&
		(r.OnLockError == "" || r.OnLockError == c.onLockError()) && (r.CheckLease == nil || *r.CheckLease == c.checkLease()) &&
		(r.Work == "" || sameWork(r.Work, c.work()))
}

// checkAxes refuses sweep keys that could match no cell.
func (r Rule) checkAxes() error {
	for _, d := range []struct{ key, value string }{{"ttl", r.TTL}, {"rtt", r.RTT}} {
		if _, err := time.ParseDuration(d.value); d.value != "" && err != nil {
			return fmt.Errorf("%s: %w", d.key, err)
		}
	}
	if r.Concurrency < 0 {
		return fmt.Errorf("concurrency %d is negative", r.Concurrency)
	}
	if err := knownVariant(r.Variant); r.Variant != "" && err != nil {
		return err
	}
	if err := knownLockError(r.OnLockError); r.OnLockError != "" && err != nil {
		return err
	}
	if _, err := workloads.ParseWork(r.Work); r.Work != "" && err != nil {
		return fmt.Errorf("work: %w", err)
	}
	return nil
}
