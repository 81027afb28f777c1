// Conformance test extension: input handled/transform, before_agent_start UI + injected custom
// message, a throwing turn_start handler, a tool_result patch (structuredContent dropped),
// message_end replacement (same role) and a wrong-role replacement (extension_error).
export default function (pi: any) {
  pi.registerTool({
    name: "lookup",
    label: "Lookup",
    description: "Look up a stored record by key",
    parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
    async execute(_toolCallId: string, params: any) {
      return {
        content: [{ type: "text", text: `record ${params.key}: password=hunter2` }],
        details: { key: params.key },
        structuredContent: { key: params.key, password: "hunter2" },
      };
    },
  });
  pi.on("input", async (event: any, ctx: any) => {
    if (event.text.startsWith("!skip")) {
      ctx.ui.notify(`skipped (${event.source}): ${event.text}`, "info");
      return { action: "handled" };
    }
    if (event.text.includes("SECRET")) {
      return { action: "transform", text: event.text.split("SECRET").join("[redacted]") };
    }
    return { action: "continue" };
  });
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    ctx.ui.notify(`starting (${event.messageType}): ${event.prompt}`, "info");
    return {
      message: { customType: "redactor", content: "Note: secrets are redacted.", display: true, details: { rule: 1 } },
    };
  });
  pi.on("turn_start", async (event: any) => {
    if (event.turnIndex === 0) throw new Error("turn_start failed on purpose");
  });
  pi.on("tool_result", async (event: any) => {
    if (event.toolName !== "lookup") return undefined;
    const text = event.content[0].text.split("hunter2").join("******");
    return { content: [{ type: "text", text }] };
  });
  pi.on("message_end", async (event: any) => {
    const m = event.message;
    if (m.role !== "assistant") return undefined;
    const text = m.content.filter((b: any) => b.type === "text").map((b: any) => b.text).join("");
    if (text.includes("WRONGROLE")) {
      return { message: { role: "user", content: [{ type: "text", text: "not allowed" }], timestamp: m.timestamp } };
    }
    if (!text.includes("hunter2")) return undefined;
    const content = m.content.map((b: any) => (b.type === "text" ? { ...b, text: b.text.split("hunter2").join("******") } : b));
    return { message: { ...m, content } };
  });
}
