// Package pluginrecorder interposes between a kubelet and the kubelet plugins of a node and
// records their conversation: every call the kubelet makes to a plugin's registration and
// service sockets, with what was asked, answered and when (issue 31's trace, MUT-03).
//
// Plugins put their registration sockets in a directory of their own (the driver registry)
// instead of the kubelet's plugins_registry; for each one the recorder serves a socket of the
// same name in the kubelet's directory, so the kubelet registers the recorder in the plugin's
// place, and forwards every call, whatever its service, to the plugin.
package pluginrecorder

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// The services the kubelet speaks to plugins: imported so their messages decode by name.
	_ "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	_ "k8s.io/kubelet/pkg/apis/dra-health/v1"
	_ "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	_ "k8s.io/kubelet/pkg/apis/dra/v1"
	_ "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	_ "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Record is one line of the trace: a unary call with its answer, or one message of a stream.
type Record struct {
	Start    time.Time       `json:"start"`
	End      time.Time       `json:"end"`
	Socket   string          `json:"socket"`           // the registration socket's name in the driver registry
	Method   string          `json:"method"`           // gRPC full method name
	Stream   string          `json:"stream,omitempty"` // for a stream's messages: "request" or "response"
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    string          `json:"error,omitempty"`
	CDI      *CDISnapshot    `json:"cdi,omitempty"` // the node's CDI specs as the answer went back (prepare, unprepare)
}

// Recorder writes records as whole lines, one at a time: calls arrive concurrently.
type Recorder struct {
	mu  sync.Mutex
	out io.Writer
	// Node is added to every line, so that the lines of several nodes can be merged.
	node string
}

func NewRecorder(out io.Writer, node string) *Recorder {
	return &Recorder{out: out, node: node}
}

func (r *Recorder) write(rec Record) {
	line := struct {
		Node string `json:"node"`
		Record
	}{r.node, rec}
	b, err := json.Marshal(line)
	if err != nil { // only if a decoded message is not valid JSON, which protojson never gives
		b = []byte(fmt.Sprintf(`{"node":%q,"method":%q,"error":%q}`, r.node, rec.Method, err.Error()))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(r.out, string(b))
}

var protoNames = protojson.MarshalOptions{UseProtoNames: true}

// decode gives a message's wire bytes as JSON, by the method's input or output type when the
// service is one the kubelet speaks, or only its size otherwise.
func decode(method string, input bool, wire []byte) json.RawMessage {
	if wire == nil {
		return nil
	}
	if t := messageType(method, input); t != nil {
		msg := t.New().Interface()
		if proto.Unmarshal(wire, msg) == nil {
			if b, err := protoNames.Marshal(msg); err == nil {
				return b
			}
		}
	}
	return json.RawMessage(fmt.Sprintf(`{"undecoded_bytes":%d}`, len(wire)))
}

func messageType(method string, input bool) protoreflect.MessageType {
	md := methodDescriptor(method)
	if md == nil {
		return nil
	}
	msg := md.Output()
	if input {
		msg = md.Input()
	}
	t, err := protoregistry.GlobalTypes.FindMessageByName(msg.FullName())
	if err != nil {
		return nil
	}
	return t
}

// methodDescriptor finds "/package.Service/Method" among the registered services, nil if unknown.
func methodDescriptor(method string) protoreflect.MethodDescriptor {
	service, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok {
		return nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	return sd.Methods().ByName(protoreflect.Name(name))
}
