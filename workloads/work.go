package workloads

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Work is how long a critical section works between its read and its
// write: uniform over [Min, Max], except that one section in Every (drawn
// at random), when Every is set, works Long instead. The tail is what lets
// renewal bugs show: a section that outlasts the TTL needs its lease
// renewed, and a client that does not renew it is found out.
type Work struct {
	Min, Max time.Duration
	Every    int64
	Long     time.Duration
}

// UniformWork is --work-max's meaning: uniform:0-MAX.
func UniformWork(max time.Duration) string { return "uniform:0-" + max.String() }

// ParseWork reads a distribution: uniform:MIN-MAX (e.g. uniform:0-200ms),
// fixed:D, or tail:MIN-MAX,1/N,LONG (uniform, except that one section in N
// works LONG).
func ParseWork(s string) (Work, error) { return parseDist("--work", s) }

// ParseThink reads --think, the time a client spends between a release
// and its next acquire, in the syntax of --work; "" is no time at all.
func ParseThink(s string) (Work, error) {
	if s == "" {
		return Work{}, nil
	}
	return parseDist("--think", s)
}

// parseDist reads a distribution given to flag, which its errors name.
func parseDist(flag, s string) (Work, error) {
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		return Work{}, fmt.Errorf("%s %q: want uniform:MIN-MAX, fixed:D or tail:MIN-MAX,1/N,LONG", flag, s)
	}
	var w Work
	var err error
	switch kind {
	case "fixed":
		w.Min, err = nonNegative(arg)
		w.Max = w.Min
	case "uniform":
		w.Min, w.Max, err = span(arg)
	case "tail":
		parts := strings.Split(arg, ",")
		if len(parts) != 3 || !strings.HasPrefix(parts[1], "1/") {
			return Work{}, fmt.Errorf("%s %q: want tail:MIN-MAX,1/N,LONG", flag, s)
		}
		if w.Min, w.Max, err = span(parts[0]); err != nil {
			break
		}
		if w.Every, err = strconv.ParseInt(strings.TrimPrefix(parts[1], "1/"), 10, 64); err != nil || w.Every < 2 {
			return Work{}, fmt.Errorf("%s %q: N in 1/N must be a whole number of at least 2", flag, s)
		}
		w.Long, err = nonNegative(parts[2])
	default:
		return Work{}, fmt.Errorf("%s %q: unknown distribution %q (want uniform, fixed or tail)", flag, s, kind)
	}
	if err != nil {
		return Work{}, fmt.Errorf("%s %q: %w", flag, s, err)
	}
	return w, nil
}

func span(s string) (time.Duration, time.Duration, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("want a range MIN-MAX, got %q", s)
	}
	a, err := nonNegative(lo)
	if err != nil {
		return 0, 0, err
	}
	b, err := nonNegative(hi)
	if err != nil {
		return 0, 0, err
	}
	if b < a {
		return 0, 0, fmt.Errorf("range %q ends before it starts", s)
	}
	return a, b, nil
}

func nonNegative(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// Draw is one section's work.
func (w Work) Draw(r *rand.Rand) time.Duration {
	if w.Every > 0 && r.Int64N(w.Every) == 0 {
		return w.Long
	}
	return w.Min + time.Duration(r.Int64N(int64(w.Max-w.Min)+1))
}

// Longest is the longest work a section can draw: how long a client asked
// to stop may still take to finish its section.
func (w Work) Longest() time.Duration {
	if w.Every > 0 {
		return max(w.Max, w.Long)
	}
	return w.Max
}
