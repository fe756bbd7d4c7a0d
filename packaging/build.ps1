# Builds Sotto's Windows installer: dist\sotto-<version>-windows-x64-setup.exe (Inno Setup 6), and
# the onedir bundle it installs (build\dist\sotto\sotto.exe, the command; sottow.exe, the app).
#   powershell -ExecutionPolicy Bypass -File packaging\build.ps1 [-NoInstaller]
# Needs Python 3.11, Visual Studio's C++ build tools and CMake (llama-cpp-python is built from
# source with llama.cpp's llamafile kernels off, as packaging/setup.sh does; the wheel is kept in
# .cache\wheels\windows), and Inno Setup 6 (ISCC.exe on PATH or in its default folder).
# The same spec file as Linux and macOS: packaging\sotto.spec.
param([switch]$NoInstaller)
$ErrorActionPreference = "Stop"
$Root = Split-Path -Parent $PSScriptRoot
Set-Location $Root

function Say([string]$Message) { Write-Host "sotto build: $Message" }
function Run {  # a program; stops the build when it fails
  param([Parameter(Mandatory)][string]$Exe, [Parameter(ValueFromRemainingArguments)][string[]]$Rest)
  & $Exe @Rest
  if ($LASTEXITCODE -ne 0) { throw "$Exe $($Rest -join ' ') failed with exit code $LASTEXITCODE" }
}

# --- 1. the virtual environment: Sotto's own dependencies, pinned by requirements.lock -------------
$Py = ".venv\Scripts\python.exe"
if (-not (Test-Path $Py)) {
  Say "creating .venv"
  if (Get-Command py -ErrorAction SilentlyContinue) { Run py -3.11 -m venv .venv } else { Run python -m venv .venv }
}
Run $Py -m pip install -q --disable-pip-version-check --upgrade pip wheel
$LlamaPin = (Select-String -Path requirements.lock -Pattern '^llama[-_]cpp[-_]python==').Line
$Wheels = ".cache\wheels\windows"
if (-not (Get-ChildItem "$Wheels\llama_cpp_python-*.whl" -ErrorAction SilentlyContinue)) {
  Say "building $LlamaPin (several minutes, once)"
  $env:CMAKE_ARGS = "-DGGML_LLAMAFILE=OFF $env:CMAKE_ARGS".Trim()
  Run $Py -m pip wheel --no-deps --no-binary llama-cpp-python --no-cache-dir $LlamaPin -w $Wheels
}
Run $Py -m pip install -q --no-deps --force-reinstall (Get-ChildItem "$Wheels\llama_cpp_python-*.whl")[0].FullName
# the app's dependencies only (not the test tools), at the versions of requirements.lock
Run $Py -m pip install -q -c requirements.lock -e .
# the GE2E voice encoder's weights (speaker labels) ship inside Resemblyzer's wheel: only that file is read
Run $Py -m pip install -q --no-deps Resemblyzer==0.1.4
Run $Py -m pip install -q -r packaging\build-requirements.txt

# --- 2. the bundled models, prepared and sha256-checked ---------------------------------------------
if (-not $env:SOTTO_MODELS_DIR) { $env:SOTTO_MODELS_DIR = "$Root\.cache\models" }
Run $Py packaging\pyinstaller\stage_models.py build\bundle-models

# --- 3. the onedir bundle ----------------------------------------------------------------------------
Say "PyInstaller onedir bundle"
$env:SOTTO_BUNDLE_MODELS = "$Root\build\bundle-models"
Run $Py -m PyInstaller --noconfirm --log-level WARN --distpath build\dist --workpath build\pyinstaller packaging\sotto.spec
$Bundle = "$Root\build\dist\sotto"
$Version = (& $Py -c "import core; print(core.__version__)").Trim()
$Size = [math]::Round(((Get-ChildItem $Bundle -Recurse -File | Measure-Object Length -Sum).Sum) / 1MB)
Say "bundle built: $Bundle ($Size MB)"
if ($NoInstaller) { exit 0 }

# --- 4. the installer --------------------------------------------------------------------------------
$Iscc = (Get-Command iscc -ErrorAction SilentlyContinue).Source
if (-not $Iscc) { $Iscc = "${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe" }
if (-not (Test-Path $Iscc)) { throw "Inno Setup 6 is not installed (choco install innosetup, or jrsoftware.org)." }
New-Item -ItemType Directory -Force dist | Out-Null
Run $Iscc /Q "/DAppVersion=$Version" "/DBundleDir=$Bundle" "/DOutputDir=$Root\dist" packaging\windows\sotto.iss
Say "dist\sotto-$Version-windows-x64-setup.exe"
