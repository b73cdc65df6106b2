"""The course's tools: the tasks ``./course.sh`` runs, the lint, the regeneration, the data and
the editions. Run one from the repository's root as a module (``python -m scripts.lint_course``);
they import each other as ``from scripts import notebook_minutes``. They sit above ``helpers``
(an import-linter contract in ``pyproject.toml``): helpers never imports a script."""
