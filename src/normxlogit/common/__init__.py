"""The ground floor: what every other part uses and that uses no other part.

Errors a user can act on, option conversion, checked and atomic outputs, input-path
checks, consoles that never read text as markup, field checks of saved JSON, and the
readable text of tokens. Nothing here imports torch or another normxlogit package
(`make lint` checks it).
"""
