// Command charts draws a line chart as SVG from a CSV file of a benchmark
// run, one line per series, so that docs/performance.md shows the run's own
// data (bench/curves calls it; it needs nothing beyond Go's standard
// library).
//
//	charts -in connections.csv -x connections -y rps -series server \
//	    -title "Throughput against connections" -ylabel "requests/s" -out connections-rps.svg
//
// The x values are categories, evenly spaced in the order they first appear
// (1, 50, 200, 1000 connections read better so than on a linear axis); the
// y axis is linear from zero, or logarithmic with -logy.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "", "CSV file with a header line")
	out := flag.String("out", "", "SVG file to write")
	xcol := flag.String("x", "", "column of the x values")
	ycol := flag.String("y", "", "column of the y values")
	scol := flag.String("series", "", "column naming each line")
	title := flag.String("title", "", "the chart's title")
	xlabel := flag.String("xlabel", "", "the x axis's label (default: the column's name)")
	ylabel := flag.String("ylabel", "", "the y axis's label (default: the column's name)")
	logy := flag.Bool("logy", false, "logarithmic y axis")
	flag.Parse()
	if *in == "" || *out == "" || *xcol == "" || *ycol == "" || *scol == "" {
		fmt.Fprintln(os.Stderr, "usage: charts -in FILE.csv -out FILE.svg -x COL -y COL -series COL [-title T] [-xlabel L] [-ylabel L] [-logy]")
		os.Exit(2)
	}
	c, err := load(*in, *xcol, *ycol, *scol)
	if err == nil {
		c.title, c.logy = *title, *logy
		c.xlabel, c.ylabel = cmp(*xlabel, *xcol), cmp(*ylabel, *ycol)
		err = os.WriteFile(*out, []byte(c.svg()), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "charts:", err)
		os.Exit(1)
	}
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// chart is the data of one chart: x categories, and for each series its y
// value at each category (NaN where it has none).
type chart struct {
	title, xlabel, ylabel string
	logy                  bool
	xs                    []string
	series                []string
	ys                    map[string][]float64
}

// load reads the three columns of every row.
func load(path, xcol, ycol, scol string) (*chart, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := func(name string) (int, error) {
		if i := slices.Index(header, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("%s: no column %q (it has %s)", path, name, strings.Join(header, ", "))
	}
	xi, err := col(xcol)
	if err != nil {
		return nil, err
	}
	yi, err := col(ycol)
	if err != nil {
		return nil, err
	}
	si, err := col(scol)
	if err != nil {
		return nil, err
	}
	type point struct {
		x, s string
		y    float64
	}
	var points []point
	c := &chart{ys: map[string][]float64{}}
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		y, err := strconv.ParseFloat(row[yi], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", path, ycol, row[yi], err)
		}
		points = append(points, point{row[xi], row[si], y})
		if !slices.Contains(c.xs, row[xi]) {
			c.xs = append(c.xs, row[xi])
		}
		if !slices.Contains(c.series, row[si]) {
			c.series = append(c.series, row[si])
		}
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	for _, s := range c.series {
		ys := make([]float64, len(c.xs))
		for i := range ys {
			ys[i] = math.NaN()
		}
		c.ys[s] = ys
	}
	for _, p := range points {
		c.ys[p.s][slices.Index(c.xs, p.x)] = p.y
	}
	return c, nil
}

// The drawing's geometry, in pixels: the plot area and, right of it, the
// legend.
const (
	width, height           = 760, 400
	left, right, top, below = 80, 250, 40, 55
	plotW, plotH            = width - left - right, height - top - below
)

// palette: colours that stay apart for the colour-blind (Okabe and Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// svg draws the chart.
func (c *chart) svg() string {
	lo, hi := c.yrange()
	ypix := func(v float64) float64 {
		if c.logy {
			return top + plotH*(1-(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo)))
		}
		return top + plotH*(1-(v-lo)/(hi-lo))
	}
	xpix := func(i int) float64 {
		if len(c.xs) == 1 {
			return left + plotW/2
		}
		return left + 20 + float64(i)*(plotW-40)/float64(len(c.xs)-1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(c.title))
	for _, t := range c.yticks(lo, hi) {
		y := ypix(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, human(t))
	}
	for i, x := range c.xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xpix(i), top+plotH+18, html.EscapeString(x))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+plotW/2, height-12, html.EscapeString(c.xlabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, html.EscapeString(c.ylabel))
	for si, s := range c.series {
		colour := palette[si%len(palette)]
		var path []string
		for i, v := range c.ys[s] {
			if math.IsNaN(v) || (c.logy && v <= 0) {
				continue
			}
			path = append(path, fmt.Sprintf("%.1f,%.1f", xpix(i), ypix(v)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s</title></circle>`+"\n",
				xpix(i), ypix(v), colour, html.EscapeString(s), human(v))
		}
		if len(path) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(path, " "), colour)
		}
		ly := top + 10 + 20*si
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", left+plotW+12, ly, left+plotW+32, ly, colour)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", left+plotW+38, ly+4, html.EscapeString(s))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// yrange is the y axis's extent: from zero (linear) or the decade below the
// smallest value (logarithmic) to a round value above the largest.
func (c *chart) yrange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, ys := range c.ys {
		for _, v := range ys {
			if math.IsNaN(v) || (c.logy && v <= 0) {
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(hi, -1) {
		return 0, 1
	}
	if c.logy {
		return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)+1e-9))
	}
	step := niceStep(hi / 5)
	return 0, math.Max(step, math.Ceil(hi*1.05/step)*step)
}

// yticks are the gridlines: decades and their halves on a log axis, round
// steps on a linear one.
func (c *chart) yticks(lo, hi float64) []float64 {
	var ts []float64
	if c.logy {
		for d := lo; d <= hi*1.0001; d *= 10 {
			ts = append(ts, d)
			if d*10 <= hi*1.0001 && hi/lo <= 1000 {
				ts = append(ts, d*2, d*5)
			}
		}
		return ts
	}
	step := niceStep(hi / 5)
	for t := lo; t <= hi*1.0001; t += step {
		ts = append(ts, t)
	}
	return ts
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// human writes v briefly: 1.2M, 350k, 0.25.
func human(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}
