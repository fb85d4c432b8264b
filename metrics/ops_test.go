package metrics

import (
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestOpsFilesNameExportedMetrics keeps the Grafana dashboard and the
// alerting rules in ops/ true to the metrics: every rlserver_* name they
// query must be one this package exports (a histogram's _bucket, _sum and
// _count included).
func TestOpsFilesNameExportedMetrics(t *testing.T) {
	exported := map[string]bool{}
	descs := make(chan *prometheus.Desc, 256)
	src := testSources()
	for _, c := range []prometheus.Collector{newCollector(src, func() error { return nil }), NewLatency(), NewRaftSink()} {
		c.Describe(descs)
	}
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %v", d)
		}
		exported[m[1]] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			exported[m[1]+suffix] = true
		}
	}
	used := regexp.MustCompile(`\brlserver_[a-z_]+`)
	for _, file := range []string{"../ops/grafana/rlserver.json", "../ops/prometheus/rlserver.rules.yml", "../ops/prometheus/rlserver.rules.test.yml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		names := used.FindAllString(string(data), -1)
		if len(names) == 0 {
			t.Errorf("%s names no rlserver metric", file)
		}
		for _, name := range names {
			if !exported[name] {
				t.Errorf("%s queries %s, which rlserver does not export", file, name)
			}
		}
	}
}
