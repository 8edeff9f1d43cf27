package main

import "testing"

func TestNVMLBusIDsBecomeTheKernelsBDFs(t *testing.T) {
	for nvmlID, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0", "00000001:C1:1F.7": "0001:c1:1f.7", "0000:0a:00.0": "0000:0a:00.0",
	} {
		raw := make([]int8, 32)
		for i, c := range []byte(nvmlID) {
			raw[i] = int8(c)
		}
		if got := linuxBusID(raw); got != want {
			t.Errorf("linuxBusID(%q) = %q, want %q", nvmlID, got, want)
		}
	}
}
