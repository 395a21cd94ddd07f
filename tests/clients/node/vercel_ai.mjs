// The Vercel AI SDK (`generateText` with a tool, the chatbot keeping the history) with its
// OpenTelemetry telemetry switched on, as its docs show: a NodeTracerProvider registered
// globally, exporting over OTLP/HTTP. The conversation and user ids go in the telemetry
// metadata (`ai.telemetry.metadata.sessionId`, `ai.telemetry.metadata.userId`).
import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { generateText, jsonSchema, stepCountIs, tool } from "ai";

const plan = JSON.parse(process.env.SCENARIO_JSON);
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": process.env.SCENARIO_SERVICE }),
  spanProcessors: [
    new BatchSpanProcessor(
      new OTLPTraceExporter({ url: `${process.env.SCENARIO_OTLP_ENDPOINT}/v1/traces` }),
    ),
  ],
});
provider.register();

const openai = createOpenAI({ baseURL: process.env.SCENARIO_CHAT_BASE_URL, apiKey: "loopback" });
const tools = {
  [plan.tool.name]: tool({
    description: plan.tool.description,
    inputSchema: jsonSchema(plan.tool.parameters),
    execute: async ({ label }) => JSON.stringify(plan.tool.results[label]),
  }),
};

for (const conversation of plan.conversations) {
  const messages = [];
  for (const text of conversation.messages) {
    messages.push({ role: "user", content: text });
    const result = await generateText({
      model: openai.chat(plan.model),
      system: plan.system,
      messages,
      tools,
      stopWhen: stepCountIs(4),
      maxRetries: 0,
      experimental_telemetry: {
        isEnabled: true,
        functionId: "support-turn",
        metadata: { sessionId: conversation.id, userId: conversation.user },
      },
    });
    messages.push(...result.response.messages);
  }
}
await provider.shutdown();
