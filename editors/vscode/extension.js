// The fairspec extension: starts `fairspec lsp` (the language server, over stdio)
// for .fair files. The command can be changed in the settings (fairspec.server.command),
// e.g. ["python", "-m", "fairspec.cli", "lsp"] for a virtual environment.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace
    .getConfiguration("fairspec")
    .get("server.command", ["fairspec", "lsp"]);
  const serverOptions = { command, args, transport: TransportKind.stdio };
  // No file watcher of its own: the server registers one (workspace/didChangeWatchedFiles, dynamically,
  // for the specs, models and data it reads), and a second one here made each saved file reported twice.
  const clientOptions = {
    documentSelector: [{ scheme: "file", language: "fairspec" }],
  };
  client = new LanguageClient("fairspec", "fairspec", serverOptions, clientOptions);
  // the server's code lens "check NAME" above each property runs `fairspec check FILE --property NAME`
  // (the server command with `lsp` replaced by `check`) in a terminal
  context.subscriptions.push(vscode.commands.registerCommand("fairspec.checkProperty", (uri, name) => {
    const file = vscode.Uri.parse(uri).fsPath;
    const base = [command, ...args];
    const check = base[base.length - 1] === "lsp" ? base.slice(0, -1) : base;
    const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;
    const terminal = vscode.window.createTerminal("fairspec check");
    terminal.show();
    terminal.sendText([...check, "check", file, "--property", name].map(quote).join(" "));
  }));
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
