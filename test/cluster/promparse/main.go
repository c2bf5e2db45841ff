// promparse reads a Prometheus text exposition (0.0.4) on stdin with the Prometheus project's own
// parser (github.com/prometheus/common/expfmt, legacy name validation, as the kubelet's names
// are), and prints what it parsed as JSON: family name -> type and series, numbers as Go writes them
// (strings: JSON has no +Inf). Exit status 1 (with the
// parser's error on stderr) when the text does not parse, so a test can feed it a node's /metrics.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type bucket struct {
	UpperBound string `json:"le"`
	Count      uint64 `json:"count"`
}

type series struct {
	Labels  map[string]string `json:"labels"`
	Value   *string           `json:"value,omitempty"`
	Count   *uint64           `json:"count,omitempty"`
	Sum     *string           `json:"sum,omitempty"`
	Buckets []bucket          `json:"buckets,omitempty"`
}

type family struct {
	Type   string   `json:"type"`
	Help   string   `json:"help"`
	Series []series `json:"series"`
}

// num writes a float as Go does ("+Inf", "NaN" and shortest decimals): JSON has no infinities.
func num(v float64) *string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	return &s
}

func convert(m *dto.Metric) series {
	s := series{Labels: map[string]string{}}
	for _, l := range m.GetLabel() {
		s.Labels[l.GetName()] = l.GetValue()
	}
	switch {
	case m.Counter != nil:
		s.Value = num(m.GetCounter().GetValue())
	case m.Gauge != nil:
		s.Value = num(m.GetGauge().GetValue())
	case m.Untyped != nil:
		s.Value = num(m.GetUntyped().GetValue())
	case m.Histogram != nil:
		h := m.GetHistogram()
		c := h.GetSampleCount()
		s.Count, s.Sum = &c, num(h.GetSampleSum())
		for _, b := range h.GetBucket() {
			s.Buckets = append(s.Buckets, bucket{UpperBound: *num(b.GetUpperBound()), Count: b.GetCumulativeCount()})
		}
	}
	return s
}

func main() {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promparse:", err)
		os.Exit(1)
	}
	out := map[string]family{}
	for name, mf := range families {
		f := family{Type: mf.GetType().String(), Help: mf.GetHelp()}
		for _, m := range mf.GetMetric() {
			f.Series = append(f.Series, convert(m))
		}
		out[name] = f
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promparse:", err)
		os.Exit(1)
	}
}
