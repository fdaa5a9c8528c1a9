package metrics

// CDF is the histogram's cumulative distribution, for drawing: the lower
// edge of its lowest filled bucket at 0, then the upper edge of each filled
// bucket, in ms, with the fraction of the samples at or below it. Between
// the points the samples' spread is unknown, to the width of a bucket.
// Both are empty for an empty histogram.
func (h Histogram) CDF() (ms, frac []float64) {
	if h.N == 0 || len(h.Counts) == 0 {
		return nil, nil
	}
	ms = append(ms, upper(h.Counts[0][0]-1))
	frac = append(frac, 0)
	var seen int64
	for _, c := range h.Counts {
		seen += c[1]
		ms = append(ms, upper(c[0]))
		frac = append(frac, float64(seen)/float64(h.N))
	}
	return ms, frac
}
