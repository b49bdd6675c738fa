"""The playbooks this plugin adds: every .yaml file in this folder (entry point warpwizard.playbooks)."""
