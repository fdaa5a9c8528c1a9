// Package metrics measures what a lock costs from a run's recorded history:
// how long acquires wait, what an uncontended acquire costs, how long a
// hand-over takes, how long renewals take, how long the lock is unavailable
// after each fault. Every figure comes from lines history.jsonl already
// holds, and each run keeps its samples as mergeable histograms, so that
// the percentiles of a group of runs come from their merged histograms,
// not from raw samples nor from medians of per-run percentiles.
package metrics

import (
	"math"
	"slices"
)

// Buckets are fixed and logarithmic, the same for every run, so that any
// two histograms merge by adding counts: bucket i > 0 holds the samples in
// (lowest·growth^(i−1), lowest·growth^i] ms, bucket 0 those up to lowest.
// With growth 2^(1/8) a bucket is 9 % wide, and a percentile read from a
// merged histogram is within that of the pooled samples' own.
const (
	lowest  = 0.001              // ms: 1 µs
	growth  = 1.0905077326652577 // 2^(1/8)
	buckets = 8 * 40             // up to 2^40 µs, about 12 days
)

// Histogram counts samples, in ms, in the fixed buckets. Its zero value
// is empty.
type Histogram struct {
	// Counts are the counts of the buckets that hold samples, as
	// [bucket, count] pairs in bucket order: sparse, since a run's
	// samples fill few of them.
	Counts [][2]int64 `json:"counts"`
	N      int64      `json:"n"`
	// Censored counts the samples that are only lower bounds (an acquire
	// that timed out, or got no answer, waited at least that long).
	Censored int64 `json:"censored,omitempty"`
}

// bucket is the bucket that holds ms.
func bucket(ms float64) int64 {
	if ms <= lowest || math.IsNaN(ms) {
		return 0
	}
	i := int64(math.Ceil(math.Log(ms/lowest) / math.Log(growth)))
	return min(max(i, 0), buckets-1)
}

// upper is the upper edge of bucket i, in ms.
func upper(i int64) float64 { return lowest * math.Pow(growth, float64(i)) }

// Add counts one sample of ms; censored marks it a lower bound.
func (h *Histogram) Add(ms float64, censored bool) {
	b := bucket(ms)
	k, found := slices.BinarySearchFunc(h.Counts, b, func(c [2]int64, b int64) int { return int(c[0] - b) })
	if found {
		h.Counts[k][1]++
	} else {
		h.Counts = slices.Insert(h.Counts, k, [2]int64{b, 1})
	}
	h.N++
	if censored {
		h.Censored++
	}
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o Histogram) {
	for _, c := range o.Counts {
		k, found := slices.BinarySearchFunc(h.Counts, c[0], func(x [2]int64, b int64) int { return int(x[0] - b) })
		if found {
			h.Counts[k][1] += c[1]
		} else {
			h.Counts = slices.Insert(h.Counts, k, c)
		}
	}
	h.N += o.N
	h.Censored += o.Censored
}

// Quantile is the q-quantile (0 < q ≤ 1) of the samples, as the upper edge
// of the bucket that holds it: the smallest sample of rank ⌈q·N⌉ lies in
// that bucket. ok is false for an empty histogram.
func (h Histogram) Quantile(q float64) (ms float64, ok bool) {
	if h.N == 0 {
		return 0, false
	}
	rank := max(int64(math.Ceil(q*float64(h.N))), 1)
	var seen int64
	for _, c := range h.Counts {
		if seen += c[1]; seen >= rank {
			return upper(c[0]), true
		}
	}
	return upper(h.Counts[len(h.Counts)-1][0]), true
}

// Bucket is the index of the bucket that holds ms, for tests and for
// readers that hold a quantile against a raw sample.
func Bucket(ms float64) int64 { return bucket(ms) }
