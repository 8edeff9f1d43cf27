package pluginrecorder

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// frame is a message as it travels, never decoded on the way: the recorder forwards services
// it does not know, and a message it cannot decode, unchanged.
type frame struct{ wire []byte }

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(*frame).wire, nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	v.(*frame).wire = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" } // the content type both sides announce

func dial(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
}

// rewrite may change an answer on its way to the kubelet (the registration's endpoint); the
// record keeps what the plugin answered.
type rewrite func(method string, answer []byte) []byte

// forwarder passes every call of a server to one backend connection, recording it.
type forwarder struct {
	backend *grpc.ClientConn
	rec     *Recorder
	socket  string
	rewrite rewrite
	cdiDirs []string // read after a prepare or unprepare, before its answer goes back
}

func (f *forwarder) server() *grpc.Server {
	return grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(f.handle))
}

// handle forwards one call, of any kind: a unary call is one record with its request and
// answer; each message of a streaming call is a record of its own as it passes, so a watch that
// never ends is seen as it goes.
func (f *forwarder) handle(_ any, in grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(in)
	start := time.Now()
	md, _ := metadata.FromIncomingContext(in.Context())
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(in.Context(), md.Copy()))
	defer cancel()
	out, err := f.backend.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	unary := isUnary(method)
	if err != nil {
		f.rec.write(Record{Start: start, End: time.Now(), Socket: f.socket, Method: method, Error: err.Error()})
		return err
	}
	var request, answer []byte
	var cdi *CDISnapshot
	sent := make(chan error, 1)
	asked := make(chan []byte, 1) // a unary request, to the snapshot taken when its answer arrives
	go func() { sent <- f.requests(in, out, method, unary, &request, asked) }()
	err = f.answers(in, out, method, unary, &answer, func() {
		if len(f.cdiDirs) > 0 && snapshotted(method) {
			cdi = snapshotCDI(f.cdiDirs, claimUIDs(method, <-asked))
		}
	})
	if err == nil {
		err = <-sent // the kubelet's side ended first only in a stream it closed
	}
	if unary {
		rec := Record{Start: start, End: time.Now(), Socket: f.socket, Method: method,
			Request: decode(method, true, request), Response: decode(method, false, answer), CDI: cdi}
		if err != nil {
			rec.Error = err.Error()
		}
		f.rec.write(rec)
	} else if err != nil {
		f.rec.write(Record{Start: start, End: time.Now(), Socket: f.socket, Method: method, Stream: "end", Error: err.Error()})
	}
	return err
}

func (f *forwarder) requests(in grpc.ServerStream, out grpc.ClientStream, method string, unary bool, first *[]byte,
	asked chan<- []byte) error {
	for {
		msg := &frame{}
		if err := in.RecvMsg(msg); err != nil {
			if errors.Is(err, io.EOF) {
				return out.CloseSend()
			}
			return err
		}
		if unary {
			*first = msg.wire
			select {
			case asked <- msg.wire:
			default: // a client sending a unary call twice: the first is the one answered
			}
		} else {
			f.streamed(method, "request", true, msg.wire)
		}
		if err := out.SendMsg(msg); err != nil {
			return err
		}
	}
}

// answers passes the plugin's messages back; `arrived` runs on a unary answer before the kubelet gets it.
func (f *forwarder) answers(in grpc.ServerStream, out grpc.ClientStream, method string, unary bool, first *[]byte,
	arrived func()) error {
	if header, err := out.Header(); err == nil {
		if err := in.SendHeader(header); err != nil {
			return err
		}
	}
	for {
		msg := &frame{}
		if err := out.RecvMsg(msg); err != nil {
			in.SetTrailer(out.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return status.Convert(err).Err()
		}
		if unary {
			*first = msg.wire
			arrived()
		} else {
			f.streamed(method, "response", false, msg.wire)
		}
		if f.rewrite != nil {
			msg.wire = f.rewrite(method, msg.wire)
		}
		if err := in.SendMsg(msg); err != nil {
			return err
		}
	}
}

func (f *forwarder) streamed(method, direction string, input bool, wire []byte) {
	now := time.Now()
	rec := Record{Start: now, End: now, Socket: f.socket, Method: method, Stream: direction}
	if input {
		rec.Request = decode(method, true, wire)
	} else {
		rec.Response = decode(method, false, wire)
	}
	f.rec.write(rec)
}

// isUnary tells by the method's descriptor; a method nobody here knows is taken for a stream,
// whose messages are each recorded.
func isUnary(method string) bool {
	md := methodDescriptor(method)
	return md != nil && !md.IsStreamingClient() && !md.IsStreamingServer()
}
