from wizard.cli.app import entry

entry()
