package dradriver

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEachObjectChangesEveryObjectOfAStreamAndKeepsNumbers(t *testing.T) {
	stream := `{"apiVersion": "metadata.resource.k8s.io/v1beta1", "metadata": {"generation": 3},
  "requests": [{"name": "dev/one", "devices": [{"attributes": {"big": {"int": 9007199254740993}}}]}]}
{"apiVersion": "metadata.resource.k8s.io/v1alpha1", "metadata": {"generation": 3}, "requests": [{"name": "dev/one"}]}
`
	out, err := eachObject(func(obj map[string]any) { resetGeneration(obj); baseRequestNames(obj) })([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d objects, want 2:\n%s", len(lines), out)
	}
	for _, line := range lines {
		if !strings.Contains(line, `"generation":1`) || !strings.Contains(line, `"name":"dev"`) || strings.Contains(line, "dev/one") {
			t.Errorf("not changed: %s", line)
		}
	}
	if !strings.Contains(lines[0], "9007199254740993") {
		t.Errorf("a large int lost its value: %s", lines[0])
	}
	if _, err := eachObject(resetGeneration)([]byte(`{"torn": `)); err == nil {
		t.Error("a torn stream was edited without an error")
	}
}

func TestReplacingReplacesEachPair(t *testing.T) {
	out, _ := replacing(containerRoot+"resourceclaimtemplates/", containerRoot+"resourceclaims/")(
		[]byte(containerRoot + "resourceclaimtemplates/gpu/dev/x " + containerRoot + "resourceclaims/c/dev/x"))
	if want := containerRoot + "resourceclaims/gpu/dev/x " + containerRoot + "resourceclaims/c/dev/x"; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

// Two renders that overlap both come out with the later one's content; one alone keeps its own.
func TestTheSharedBufferCrossesOverlappingRenders(t *testing.T) {
	b := &sharedBuffer{hold: 300 * time.Millisecond}
	if out, _ := b.render([]byte("alone")); string(out) != "alone" {
		t.Errorf("a render alone got %q", out)
	}
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, data := range []string{"first", "second"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _ := b.render([]byte(data))
			got[i] = string(out)
		}()
		time.Sleep(50 * time.Millisecond) // the second starts while the first is held
	}
	wg.Wait()
	if got[0] != "second" || got[1] != "second" {
		t.Errorf("overlapping renders got %q, want both the second's", got)
	}
}
