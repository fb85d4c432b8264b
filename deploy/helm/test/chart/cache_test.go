package chart

import (
	"os"
	"testing"
)

// TestMain makes the chart's files the tests' inputs (ReadInputs).
func TestMain(m *testing.M) {
	if err := ReadInputs(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
