// Conformance test extension: a gate without UI dialogs. Writes under protected/ are blocked
// (notify first); a bash 'halt' is blocked with terminate:true.
export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    if ((event.toolName === "write" || event.toolName === "edit") && String(event.input.path).startsWith("protected/")) {
      ctx.ui.notify(`blocked ${event.toolName} ${event.input.path}`, "warning");
      return { block: true, reason: `Path ${event.input.path} is protected` };
    }
    if (event.toolName === "bash" && String(event.input.command).startsWith("halt")) {
      return { block: true, reason: "Halted by gate", terminate: true };
    }
    return undefined;
  });
}
