// Conformance test extension: sendMessage (idle / triggerTurn), sendUserMessage (idle, streaming
// without and with deliverAs), appendEntry, setSessionName/getSessionName, input handlers on steer.
export default function (pi: any) {
  pi.on("input", async (event: any, ctx: any) => {
    ctx.ui.notify(`input source=${event.source} sb=${event.streamingBehavior ?? "-"} text=${event.text}`);
    if (event.text.startsWith("!skip")) return { action: "handled" };
    if (event.text.includes("SECRET")) return { action: "transform", text: event.text.split("SECRET").join("[redacted]") };
    return undefined;
  });
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    ctx.ui.notify(`bas ${event.messageType} ${event.messageType === "custom" ? event.message.customType : event.prompt}`);
    return undefined;
  });
  pi.registerCommand("note", {
    handler: async (args: string, ctx: any) => {
      pi.sendMessage({ customType: "note", content: `note: ${args}`, display: true, details: { args } });
      ctx.ui.notify("note sent");
    },
  });
  pi.registerCommand("mark", {
    handler: async (args: string, ctx: any) => {
      pi.appendEntry("mark", { args });
      ctx.ui.notify("marked");
    },
  });
  pi.registerCommand("name", {
    handler: async (args: string, ctx: any) => {
      pi.setSessionName(args);
      ctx.ui.notify(`name=${pi.getSessionName()}`);
    },
  });
  pi.registerCommand("kick", {
    handler: async (_args: string, ctx: any) => {
      pi.sendMessage({ customType: "kick", content: "kick off", display: false }, { triggerTurn: true });
      ctx.ui.notify("kicked");
    },
  });
  pi.registerCommand("nudge", {
    handler: async (args: string, ctx: any) => {
      if (args === "follow") pi.sendUserMessage(`nudge ${args}`, { deliverAs: "followUp" });
      else pi.sendUserMessage(`nudge ${args}`);
      ctx.ui.notify(`nudged ${args}`);
    },
  });
}
