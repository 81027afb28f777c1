// Tool changes mid-conversation, then a prompt whose before_agent_start handler forces the
// system prompt: pi sends one leading message with the forced prompt and the current tools,
// without the in-place updates of the prompt it replaces.
export default function (pi: any) {
  pi.registerCommand("readonly", {
    handler: async (_args: string, ctx: any) => {
      pi.setActiveTools(["read"]);
      ctx.ui.notify(`tools=${pi.getActiveTools().join(",")}`);
    },
  });
  pi.on("before_agent_start", async (event: any) => {
    if (event.prompt.includes("TERSE")) return { systemPrompt: "You are a terse test bot." };
    return undefined;
  });
}
