/** Where an export went, told with an Open button. */
import * as vscode from 'vscode';

/** `message` with an Open button: a file opens in VS Code, a folder is revealed in the Explorer. */
export async function announceSaved(message: string, dest: vscode.Uri): Promise<void> {
  const choice = await vscode.window.showInformationMessage(message, 'Open');
  if (choice !== 'Open') return;
  const stat = await vscode.workspace.fs.stat(dest);
  if (stat.type & vscode.FileType.Directory) await vscode.commands.executeCommand('revealInExplorer', dest);
  else await vscode.commands.executeCommand('vscode.open', dest);
}
