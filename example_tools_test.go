package shade_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"shade"
	"shade/grammar"
)

func ExampleModel_Chat_tools() {
	m, err := shade.Open(storiesPath, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	schema := `{"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"], "additionalProperties": false}`
	weather := shade.Tool{Type: "function", Function: shade.Function{Name: "get_weather",
		Description: "The weather in a city.", Parameters: json.RawMessage(schema)}}
	msgs := []shade.Message{{Role: "user", Content: "What is the weather in Paris?"}}
	// A named (or "required") choice makes the reply a call whose arguments
	// are valid for the schema, even from a model that never saw a tool.
	res, err := m.Chat(context.Background(), msgs, shade.GenerateOptions{MaxTokens: 60,
		Tools: []shade.Tool{weather}, ToolChoice: shade.ToolChoice{Mode: "function", Name: "get_weather"}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	call := res.ToolCalls[0]
	fmt.Println(len(res.ToolCalls), call.ID, call.Function.Name, grammar.ValidateJSON([]byte(schema), []byte(call.Function.Arguments)))
	// The app runs the function and sends its result back in a "tool"
	// message after the assistant's call: the model answers from it.
	msgs = append(msgs, shade.Message{Role: "assistant", ToolCalls: res.ToolCalls},
		shade.Message{Role: "tool", ToolCallID: call.ID, Content: `{"sky": "sunny"}`})
	res, err = m.Chat(context.Background(), msgs, shade.GenerateOptions{MaxTokens: 8, Tools: []shade.Tool{weather}}, nil)
	fmt.Println(res.Tokens > 0, len(res.ToolCalls), err)
	// Output:
	// 1 call_1 get_weather <nil>
	// true 0 <nil>
}
