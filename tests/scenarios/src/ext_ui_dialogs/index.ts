// Conformance-oracle test extension (written for this harness).
export default function (pi: any) {
  pi.on("session_start", async (_event: any, ctx: any) => {
    ctx.ui.notify("oracle extension loaded", "info");
  });

  pi.on("tool_call", async (event: any, ctx: any) => {
    if (event.toolName === "bash") {
      const ok = await ctx.ui.confirm("Allow bash?", "Run: " + event.input.command);
      if (!ok) return { block: true, reason: "Blocked by user" };
    }
    return undefined;
  });

  pi.registerCommand("greet", {
    description: "Greet through extension UI dialogs",
    handler: async (args: string, ctx: any) => {
      const choice = await ctx.ui.select("Pick a greeting", ["Hello", "Howdy"]);
      const name = await ctx.ui.input("Your name?", "type a name");
      const text = await ctx.ui.editor("Edit the message", "Line 1\nLine 2");
      ctx.ui.setStatus("oracle", "greeted");
      ctx.ui.setWidget("oracle", ["--- widget ---", String(choice)]);
      ctx.ui.setTitle("pi - oracle");
      ctx.ui.notify(String(choice) + ", " + String(name) + "! args=" + args + " editor=" + JSON.stringify(text), "warning");
    },
  });

  pi.registerCommand("boom", {
    description: "Command that throws",
    handler: async () => {
      throw new Error("boom from extension command");
    },
  });

  pi.registerCommand("edge", {
    description: "Dialog answer edge cases",
    handler: async (_args: string, ctx: any) => {
      const a = await ctx.ui.select("Pick", ["A", "B"]);
      const b = await ctx.ui.input("Empty?", undefined, { timeout: 0 });
      const c = await ctx.ui.confirm("Value yes?", "answered with value");
      const d = await ctx.ui.select("Confirmed only", ["X"]);
      const e = await ctx.ui.confirm("Cancelled?", "answered cancelled");
      const f = await ctx.ui.editor("Unicode");
      const g = ctx.ui.getEditorText();
      const h = await ctx.ui.custom(() => undefined);
      const t = ctx.ui.setTheme("dark");
      ctx.ui.setStatus("edge");
      ctx.ui.setWidget("edge", ["w1"], { placement: "aboveEditor" });
      ctx.ui.pasteToEditor("pasted");
      ctx.ui.notify(JSON.stringify({ a, b, c, d, e, f, g, h: h === undefined ? "undef" : h, t }));
    },
  });
}
