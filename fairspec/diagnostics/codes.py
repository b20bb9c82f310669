"""The registry of stable diagnostic codes.

Codes never change meaning once released; new checks get new codes.  The
hundreds digit groups them: 1 syntax, 2 names and imports, 3 types and
values, 4 models, data and encodings, 5 properties and backends; 0 is the
command line (not the spec: lint reports it in its own document shape).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    code: str
    severity: str
    title: str
    hint: str | None = None


_ALL = [
    # -- the command line (argparse's usage errors under a machine format: fairspec.errordoc)
    Code("FS001", "error", "bad command-line usage", "run fairspec lint --help (or check --help) for the arguments and options"),
    Code("FS100", "note", "more diagnostics not shown", "fix the first ones and lint again"),
    # -- syntax
    Code("FS101", "error", "unexpected token", "check the statement near the caret against the grammar in the README"),
    Code("FS102", "error", "unexpected character", "strings use double quotes; names are letters, digits and _"),
    Code("FS103", "error", "unexpected end of file", "a block or a call is not closed"),
    Code("FS104", "error", "file cannot be read as text", "save the spec as UTF-8"),
    Code("FS105", "error", "expression nested too deeply", "split the expression into named groups or shorter conditions"),
    Code("FS106", "warning", "document too large to analyse as you type",
         "the language server skips it (FAIRSPEC_LSP_MAX_DOCUMENT bytes raises the limit); run `fairspec lint` on it"),
    Code("FS107", "error", "spec file too large",
         "split it into files joined with import (the limit is per file)"),
    # -- names and imports
    Code("FS201", "error", "unknown name", "declare the name first (names are case-sensitive), or import the file that declares it"),
    Code("FS202", "error", "duplicate declaration", "rename one of the two declarations"),
    Code("FS203", "error", "import not found", "import paths resolve relative to the importing file; 'fairspec/...' names the policies shipped with fairspec"),
    Code("FS204", "error", "import cycle", "break the cycle: move the shared declarations to a third file"),
    Code("FS205", "error", "unknown feature", "use a feature declared in the features block, spelled exactly"),
    Code("FS206", "error", "unknown category", "use one of the categories listed in the feature's declaration; quote names with dashes or spaces"),
    Code("FS207", "error", "unknown data column", "check the file's header or the columns = [...] list; write col(\"name-with-dash\") for other names"),
    Code("FS208", "error", "unknown option", "check the spelling; the README lists the options of each declaration"),
    Code("FS209", "error", "unknown function", "check the spelling; the README lists the functions"),
    Code("FS210", "error", "unknown policy parameter or missing argument", "give each parameter once, by position or as name = value; parameters without a default are required"),
    Code("FS211", "warning", "feature declared but not encoded", "encode the feature for the model, or drop it from the feature set if nothing reads it"),
    Code("FS213", "warning", "option without effect",
         "the option applies only together with another one (part_timeout and refine with partitions = N): add that one, or drop the option"),
    Code("FS215", "warning", "ignore comment or --ignore that cannot act",
         "name warning codes only, e.g. # fairspec: ignore[FS427] on the line of the warning or the line above; errors are never suppressible"),
    Code("FS216", "warning", "ignore comment that suppresses nothing",
         "remove it: the warning it named is gone, or is on another line (a comment acts on its own line, or alone on a line on the next one)"),
    Code("FS217", "warning", "a policy applied that states no property", "state the properties in the policy's body, or drop the apply"),
    Code("FS214", "error", "option given twice",
         "give each option once in a declaration, a call or a property: the second would silently replace the first"),
    Code("FS212", "error", "path outside the project", "a spec reads and writes inside its project (the nearest folder with fairspec.toml or .git, else the spec's folder) and the shipped policies; pass --allow-path DIR to allow another folder"),
    # -- types and values
    Code("FS301", "error", "type mismatch", "each place takes one kind of value (a number, string, condition or category, or the name of a model, feature set or data set); the message says which"),
    Code("FS302", "error", "empty or reversed range", "write the lower bound first: [lo, hi] with lo <= hi"),
    Code("FS303", "error", "value out of range", "use a value inside the declared range"),
    Code("FS304", "error", "duplicate category", "list each category once"),
    Code("FS305", "error", "wrong number of arguments", "compare the call with its form in the README"),
    Code("FS306", "error", "label expression is not boolean", "the label must be a comparison such as income == \">50K\""),
    Code("FS307", "error", "invalid threshold or option value", "use a value in the range the message names"),
    Code("FS308", "error", "invalid group", "groups are categorical or boolean features, or boolean 'group' declarations, combined with x"),
    Code("FS309", "error", "invalid probability", "probabilities lie between 0 and 1"),
    Code("FS310", "error", "probabilities of a distribution row do not sum to 1", "the probabilities of a feature's values under one condition sum to 1: p(X | u) + p(not X | u) = 1"),
    Code("FS311", "error", "distribution does not cover a feature the classifier reads", "add the feature's probabilities to the distribution, e.g. p(X) = 0.4 or p(X | P) = 0.6 and p(X | not P) = 0.3"),
    Code("FS312", "error", "continuous feature without bins", "declare bin edges on the feature (x : real in [0, 1] bins [0.3, 0.7]) or learn quantile bins in the distribution: bayes(DATA, bins = 4)"),
    Code("FS313", "warning", "a group that no value, or every value, of the declared domain meets",
         "a group's bound lies past its feature's declared range (age > 200 for age in [17, 90]), so every row is "
         "outside the group or inside it: check the bound against the feature's declaration"),
    # -- models, data, encodings
    Code("FS401", "error", "model file cannot be loaded", "paths are relative to the spec file; check that the file exists and is a model of the declared format"),
    Code("FS402", "error", "encoding width differs from the model's input width", "list every model input in the encode block, in the model's order"),
    Code("FS403", "error", "protected attribute not used by the encoding", "a protected feature the model never sees cannot be checked for individual fairness; encode it or drop 'protected'"),
    Code("FS431", "error", "a logged decision column does not say which decision is positive", "name it: predictions(DATA, decision = \"col\", positive = \"approve\"); without positive the column holds 1/0, yes/no or true/false"),
    Code("FS432", "error", "a label, where or target compares a column with text it holds only in another case", "text is compared as written: write the value as the file holds it (a Parquet boolean column is \"True\" / \"False\")"),
    Code("FS433", "warning", "the label reads empty cells of a text column as a value", "list \"\" as missing for that column (missing = {col: [\"\"]}) to drop those rows, as a Parquet null is"),
    Code("FS434", "warning", "the label is the same on every row of a file lint read whole", "compare the column with a value it holds, as the file writes it: a label false (or true) on every row makes every rate of it 0 or 0/0"),
    Code("FS435", "warning", "a logged decision column read with positive = v has empty cells", "list \"\" as missing for that column (missing = {col: [\"\"]}) to drop those rows; an empty cell is otherwise a negative decision"),
    Code("FS430", "warning", "a column is named twice in the header", "the later columns of the same name are read as NAME.1, NAME.2, ... (by position); name them all with columns = [...] to choose your own names"),
    Code("FS404", "error", "data file cannot be read", "paths are relative to the spec file; check that the file exists and is UTF-8 CSV"),
    Code("FS405", "error", "feature encoded twice", "encode each feature on one line of the encode block"),
    Code("FS406", "error", "unknown encoding kind", "encodings are raw, code, onehot, minmax and standard"),
    Code("FS407", "error", "encoding does not fit the feature type", "raw, minmax and standard encode numbers; code and onehot encode categories and booleans"),
    Code("FS408", "error", "pickle not trusted", "pickle files run code when loaded; add 'trust pickle' to the model declaration only for files you trust, or save with skops/ONNX"),
    Code("FS409", "error", "unknown model format", "formats are onnx, torch, sklearn and rule"),
    Code("FS410", "warning", "data values outside the declared domain", "widen the declared domain, or accept that those rows are dropped"),
    Code("FS411", "error", "no data declared for an encoding fitted on data", "give the scaling explicitly, e.g. minmax(lo = 17, hi = 90), or declare 'features X from DATA'"),
    Code("FS412", "error", "unknown data format", "the data formats are csv"),
    Code("FS413", "error", "model output column or decision rule is ambiguous", "add index = 1 to the model declaration for the positive class (the second column), or index = 0 for the first"),
    Code("FS414", "error", "a binary decision read from a multiclass model without index", "compare classes with class(m(x)) == class(m(x')), name a class with prob(m(x), c) or class = c, or add index = i to the model declaration for 'class i against the rest'"),
    Code("FS415", "error", "model output does not fit the model's kind", "value(m(x)) reads a regression (score = value); class, prob, logit and label read a classifier; logit(m(x), c) an output of logits"),
    Code("FS416", "error", "class probability of a multiclass model without a class", "name the class: prob(m(x), c) with c a column (0 .. K-1) or a label in quotes"),
    Code("FS417", "error", "unknown class", "a class is a column counted from 0 (a whole number) or a label the model file records (a string)"),
    Code("FS418", "error", "binary metric of a regression model without a threshold", "add threshold = t (positive where value(m(x)) >= t), or use a regression metric"),
    Code("FS419", "error", "the data's label is the truth of another class than the metric's",
         "a metric of class c compares decisions with 'the true class is c': declare the true class column with the data option target = COLUMN, or write the label as COLUMN == c"),
    Code("FS429", "warning", "the data's label, which names no class, is read as the truth of the metric's class",
         "declare the true class column with the data option target = COLUMN, or write the label as COLUMN == c; if the label is that truth, ignore the warning with # fairspec: ignore[FS429]"),
    Code("FS436", "warning", "a regression metric's threshold and the data's label cut the value differently",
         "declare the true value's column with the data option target = COLUMN, or write the label as COLUMN >= t; if the two cuts are meant, ignore the warning with # fairspec: ignore[FS436]"),
    Code("FS420", "error", "encode block disagrees with the input names or categories the model records", "encode the model's inputs under the names the model file records, in the model's order, and a categorical input by the codes of the categories it was fit on"),
    Code("FS421", "warning", "encode block order differs from the model's recorded input names", "list the features in the order the model records them"),
    Code("FS427", "warning", "scikit-learn model records no input names: its inputs are taken in the encode block's order", "fit the model on a pandas DataFrame whose columns are named as the features (or their data columns): fairspec then checks the encode block against the names the model records; otherwise make sure the block lists the features in the order the model was fitted on"),
    Code("FS422", "error", "scikit-learn pipeline and spec disagree", "drop the encode block (fairspec reads the pipeline's own encoding) and declare a feature for each column the pipeline reads, with the categories it was fitted on"),
    Code("FS438", "warning", "a code table gives two categories the same code", "give each category its own code, the one the model was fit with; if the model truly reads them as one, declare them as one category"),
    Code("FS437", "warning", "scikit-learn pipeline knows categories the feature does not declare", "declare every category the pipeline was fitted on (a model retrained on a new category is another model), or acknowledge the narrower domain with # fairspec: ignore[FS437]"),
    Code("FS439", "warning", "an ONNX classifier's own label output disagrees with the declared output it is decided by", "fairspec decides the output the declaration names (class(m(x)): the argmax of its columns; label(m(x)): its decision rule), never the classifier node's label output; if the label is the decision you mean, export scores that agree with it (an SVC: its decision_function rather than Platt probabilities), or acknowledge the difference with # fairspec: ignore[FS439] at the model declaration"),
    Code("FS441", "error", "a declared category with spaces around it", "fairspec reads every text cell without the spaces around it, so such a category matches no data row: declare it without them, and fit the model on the stripped text (frame[col] = frame[col].str.strip(); pandas.read_csv(..., skipinitialspace=True) drops the leading ones)"),
    Code("FS440", "warning", "a RandomForest / ExtraTrees model predicts on several threads (n_jobs != 1): its trees add in the order the threads finish", "set n_jobs = 1 on the forest before saving it (its trees then add in their order, one function of the input); a forest whose leaf values sum exactly in every order (e.g. trees whose leaves hold only 0 and 1) is checked as it is, any other is decided only by a margin (a pair property) or row by row (a metric of its decisions on data), else unknown; acknowledge with # fairspec: ignore[FS440] at the model declaration"),
    Code("FS424", "warning", "scikit-learn pipeline never reads a protected feature", "the pipeline drops the column, so the model is blind to it and individual fairness over it holds for every model; keep 'protected' if that is what the spec states, or check the pipeline reads the column you meant"),
    Code("FS425", "error", "XGBoost model trained with early stopping: which rounds is ambiguous", "add rounds = best to the model declaration for the rounds XGBClassifier.predict uses (0 .. best_iteration), or rounds = all for every round (Booster.predict)"),
    Code("FS426", "error", "the model's decision rule depends on a choice its declaration does not make", "an XGBoost binary:logitraw model's predict is its raw margin: add output = \"predict\" to the declaration for XGBClassifier.predict's rule (class 1 iff the margin is > 0.5), or output = \"margin\" for class 1 iff the margin is > 0"),
    Code("FS428", "error", "torch model whose forward() takes several tensors",
         "fairspec feeds a model one [N, width] tensor, the encoded features in the encode block's order: save "
         "(torch.jit.script or trace) a module whose forward(x) takes that tensor, e.g. one applying the layers to "
         "the concatenation the old forward() built (or building its NamedTuple from the tensor's columns), and list "
         "the features in that order"),
    Code("FS423", "warning", "scikit-learn pipeline evaluated whole", "the solvers need preprocessing fairspec can fold: OneHotEncoder, OrdinalEncoder, StandardScaler, MinMaxScaler, passthrough and drop in a ColumnTransformer"),
    # -- properties and backends
    Code("FS501", "error", "malformed property", "a property states one metric compared with a threshold, or forall x, x' : F with require and ensure"),
    Code("FS502", "error", "backend cannot evaluate this property", "drop the using line to let fairspec choose a backend"),
    Code("FS503", "error", "unknown backend", "backends are milp, smt, ssat, dp, search, data and repair"),
    Code("FS504", "warning", "property needs a backend that is not available yet", "check reports the property as unknown; choose an available backend with using NAME, or keep the property as a statement of intent"),
    Code("FS505", "error", "malformed repair block", "a repair block has one goal passing_rate_ratio(groups ...) >= c, optionally bound semantic_difference <= alpha * minimal and write \"FILE\""),
    Code("FS506", "error", "unsupported model construct for this backend", "choose another backend with using NAME"),
    Code("FS507", "error", "claim can never be met",
         "the quantity's range makes the comparison false for every model: check the comparison and the threshold (> 1 written for >= 0.8?)"),
    Code("FS508", "warning", "claim holds wherever its quantity is defined",
         "the threshold is at or past the end of the quantity's range, so the comparison is true for every model where the quantity is defined (where it is not, check reports unknown): tighten the threshold, or drop the property"),
    Code("FS509", "warning", "no pair meets the pre-condition",
         "a tolerance below 0 (|x.f - x'.f| < 0), bounds on one feature that no value of its declared range meets, or a relaxed feature whose two inputs' bounds lie further apart than its tolerance (|x.age - x'.age| <= 5 with x.age < 30 and x'.age > 40): the individual-fairness property holds vacuously, and check reports holds (proved) with that reason; fix the pre-condition to state a claim"),
]

CODES: dict[str, Code] = {c.code: c for c in _ALL}
