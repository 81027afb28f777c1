// Conformance test extension: more handler results — before_agent_start systemPrompt, context
// rewrite, tool_result details-only / isError patches, message_end on a toolResult, a throwing
// tool_call handler, session_before_compact cancel.
export default function (pi: any) {
  pi.registerTool({
    name: "lookup",
    label: "Lookup",
    description: "Look up a stored record by key",
    parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
    async execute(_toolCallId: string, params: any) {
      return {
        content: [{ type: "text", text: `record ${params.key}` }],
        details: { key: params.key },
        structuredContent: { key: params.key, n: 1 },
      };
    },
  });
  pi.on("before_agent_start", async (event: any) => {
    if (event.prompt.includes("TERSE")) return { systemPrompt: "You are a terse test bot." };
    return undefined;
  });
  pi.on("context", async (event: any) => {
    const messages = event.messages.map((m: any) =>
      m.role === "user" && Array.isArray(m.content)
        ? { ...m, content: m.content.map((b: any) => (b.type === "text" ? { ...b, text: b.text.split("PRIVATE").join("[private]") } : b)) }
        : m,
    );
    return { messages };
  });
  pi.on("tool_call", async (event: any) => {
    if (event.toolName === "bash" && String(event.input.command).includes("forbidden")) throw new Error("gate crashed");
    return undefined;
  });
  pi.on("tool_result", async (event: any) => {
    if (event.toolName !== "lookup") return undefined;
    if (event.input.key === "keep") return { details: { key: "keep", patched: true } };
    if (event.input.key === "err") return { isError: true };
    return undefined;
  });
  pi.on("message_end", async (event: any) => {
    const m = event.message;
    if (m.role === "toolResult" && m.toolName === "lookup" && m.details?.patched) {
      return { message: { ...m, content: [{ type: "text", text: "[tool output hidden]" }] } };
    }
    return undefined;
  });
  pi.on("session_before_compact", async (event: any, ctx: any) => {
    ctx.ui.notify(`compact reason=${event.reason} custom=${event.customInstructions ?? "-"}`);
    return { cancel: true };
  });
}
