package chart

// OpsFiles are the files of ops/ the chart carries a copy of, by their
// path in the chart: helm reads only files inside a chart.
func OpsFiles() map[string]string {
	return map[string]string{
		"files/rlserver.json":      "ops/grafana/rlserver.json",
		"files/rlserver.rules.yml": "ops/prometheus/rlserver.rules.yml",
	}
}
